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
