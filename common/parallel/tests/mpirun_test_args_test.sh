#!/usr/bin/env bash
# The multi-rank test wrapper (mpirun_test.sh) given what `bazel test --test_arg=...` appends: a
# gtest filter goes to the binary on every rank count, which stays a rank count.
set -euo pipefail
wrapper=$1 binary=$2
out=$("$wrapper" "$binary" 2 3 --gtest_filter='Communicator.BroadcastFromEveryRoot' 2>&1) || {
  echo "$out"
  echo "FAILED: the wrapper refused a test argument"
  exit 1
}
runs=$(grep -c '^\[ RUN      \] Communicator.BroadcastFromEveryRoot$' <<<"$out")
others=$(grep '^\[ RUN' <<<"$out" | grep -vc 'BroadcastFromEveryRoot$' || true)
[[ $runs == 5 && $others == 0 ]] || {
  echo "$out"
  echo "FAILED: expected the filtered test once per rank on 2 and 3 ranks (5), got $runs, and $others others"
  exit 1
}
grep -q "^== 2 ranks$" <<<"$out" && grep -q "^== 3 ranks$" <<<"$out" || {
  echo "FAILED: the rank counts were not both run"
  exit 1
}
echo "ok: the filter reached every rank of both runs"
