#!/usr/bin/env bash
# The figures tool on the sheets' cheap figures, from the test's runfiles (where the sheets and
# the benchmarks' binaries lie): every command runs and prints a table of its sheet's shape. And
# --write on a copy: the rewritten sheet names the command and this machine, and reads back with
# the same figures.
set -euo pipefail
figures=$1
shift
root=$PWD
out=$("$figures" --root "$root" --bin-dir "$root" --cheap 2>&1) || {
  echo "$out"
  echo "FAIL: the cheap figures do not run or no longer match their sheets' tables"
  exit 1
}
echo "$out"
grep -Eq '^[0-9]+ tables measured on .*: .*0 failed$' <<<"$out" || {
  echo "FAIL: no summary"
  exit 1
}
tables=$(grep -c '^== ' <<<"$out")
((tables >= 3)) || {
  echo "FAIL: $tables cheap figures measured, expected the day-2 and day-4 ones"
  exit 1
}

copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
mkdir -p "$copy/day4_large_models"
cp "$root/day4_large_models/README.md" "$copy/day4_large_models/"
"$figures" --root "$copy" --bin-dir "$root" --sheet day4 --only context_parallel_bench \
  --write >/dev/null
grep -q 'Measured with `mpirun -np 2 bazel-bin/bench/context_parallel_bench' \
  "$copy/day4_large_models/README.md" || {
  echo "FAIL: --write did not name the command"
  exit 1
}
grep -q "cores of .*, \(no GPU\|[0-9]* x \)" "$copy/day4_large_models/README.md" || {
  echo "FAIL: --write did not name the machine"
  exit 1
}
outside_figures() { sed '/<!-- figure /,/<!-- \/figure -->/d' "$1"; }
diff <(outside_figures "$root/day4_large_models/README.md") \
  <(outside_figures "$copy/day4_large_models/README.md") || {
  echo "FAIL: --write changed the sheet outside its figures"
  exit 1
}
again=$("$figures" --root "$copy" --bin-dir "$root" --sheet day4 --only context_parallel_bench)
grep -q '0 failed$' <<<"$again" || {
  echo "$again"
  echo "FAIL: the written sheet does not read back"
  exit 1
}
echo "figures_test: passed"
