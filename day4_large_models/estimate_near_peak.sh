# Sourced by day 4's lab tests: `expect_estimate_near_peak LABEL COMMAND...` fails the test
# unless the memory estimate that COMMAND prints before its run is within 15% of the allocator's
# peak it measures.
expect_estimate_near_peak() {
  local label=$1 out ratio
  shift
  out=$("$@" 2>&1)
  ratio=$(sed -n 's/^peak memory per rank: measured .*: \([0-9.]*\)x$/\1/p' <<<"$out")
  if [[ -z $ratio ]] || ! awk -v r="$ratio" 'BEGIN { exit !(r >= 0.85 && r <= 1.15) }'; then
    echo "FAILED: estimate against measured peak with '$label': '${ratio}'"
    echo "$out"
    exit 1
  fi
  echo "ok: estimated / measured peak with '$label': $ratio"
}
