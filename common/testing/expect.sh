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
