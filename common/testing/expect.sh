# Sourced by the labs' shell tests: `expect CODE TEXT COMMAND...` runs COMMAND and fails the
# test unless it exits with CODE and its output (stdout and stderr) contains TEXT.
expect() {
  local code=$1 text=$2
  shift 2
  local out got
  out=$("$@" 2>&1)
  got=$?
  if [[ $got -ne $code ]] || ! grep -qF -- "$text" <<<"$out"; then
    echo "FAILED: $* -> exit $got (expected $code with '$text'):"
    echo "$out"
    exit 1
  fi
  echo "ok: $* -> exit $got"
}

# `expect_trace_ranks TRACE RANKS EVENT...`: fails the test unless each EVENT (a regular
# expression for the JSON after `"name":"`, e.g. 'F0","ph":"X"') occurs in the Chrome trace
# TRACE for exactly the ranks (pids) RANKS, given as "0 1 ".
expect_trace_ranks() {
  local trace=$1 ranks=$2 event seen
  shift 2
  for event in "$@"; do
    seen=$(grep -oE "\"name\":\"$event,\"pid\":[0-9]+" "$trace" | sed 's/.*pid"://' |
      sort -u | tr '\n' ' ')
    if [[ $seen != "$ranks" ]]; then
      echo "FAILED: $trace has $event for ranks '$seen', not for ranks '$ranks'"
      exit 1
    fi
  done
  echo "ok: $trace has $* for ranks $ranks"
}

# `expect_wait_free COMMAND...`: runs a lab on the simulated accelerator (COMMAND names --device
# sim) and fails the test unless it exits with 0 and its summary says that no step after the
# first made the host wait for the device, on any rank (training_loop.h: the loss reads every
# --log-every steps are the only waits allowed).
expect_wait_free() {
  local out got
  out=$("$@" 2>&1)
  got=$?
  if [[ $got -ne 0 ]] ||
    ! grep -qE 'host waits for sim:[0-9]+ in steps 2\.\.[0-9]+: 0 at most on a rank' <<<"$out"; then
    echo "FAILED: $* -> exit $got, not wait-free:"
    grep -E 'host waits|error' <<<"$out" || echo "$out"
    exit 1
  fi
  echo "ok, wait-free: $*"
}

# `expect_near A B TOLERANCE WHAT`: fails the test unless the numbers A and B (a run's losses,
# say) are both given and differ by at most TOLERANCE.
expect_near() {
  if [[ -z $1 || -z $2 ]] || ! awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { exit !((a - b) ^ 2 <= t ^ 2) }'; then
    echo "FAILED: $4: '$1' and '$2' are not within $3"
    exit 1
  fi
  echo "ok: $4: $1 and $2 within $3"
}

# `expect_scale_backed_off OUTPUT POWER`: fails the test unless OUTPUT, a run's whose f16 loss
# scale started at 2^POWER (too high: its first steps overflow) and ran too few steps to grow it,
# says "loss scale S, N step(s) skipped" with N > 0 and S = 2^(POWER - N): each overflowed step
# was skipped and halved the scale once.
expect_scale_backed_off() {
  local line scale skipped
  line=$(grep -m1 -oE "^loss scale [0-9]+, [0-9]+ step\(s\) skipped" <<<"$1")
  scale=$(grep -oE "[0-9]+," <<<"$line" | tr -d ,)
  skipped=$(grep -oE "[0-9]+ step" <<<"$line" | grep -oE "[0-9]+")
  if [[ -z $line ]] || ((skipped == 0)) ||
    ! awk -v s="$scale" -v n="$skipped" -v p="$2" 'BEGIN { exit !(s * 2 ^ n == 2 ^ p) }'; then
    echo "FAILED: from a loss scale of 2^$2, expected skipped steps that each halved it, got:"
    echo "$1"
    exit 1
  fi
  echo "ok: $line (from 2^$2)"
}
