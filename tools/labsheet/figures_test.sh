#!/usr/bin/env bash
# The figures tool on the sheets' cheap figures, from the test's runfiles (where the sheets and
# the benchmarks' binaries lie): every command runs and prints a table of its sheet's shape. And
# --write on a copy: the rewritten sheet names the command and this machine, and reads back with
# the same figures. The day-1 sheet's table maker (lab_table.sh) on a few steps of the small
# network, each column read from the lab's output, and a column it does not know refused.
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
((tables >= 7)) || {
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
# --list names each figure without running it; a computed table that moved fails the run; a GPU
# table on a machine without a GPU is kept and counted.
listed=$("$figures" --root "$root" --list)
grep -q '^day4_large_models/README.md:[0-9]*  computed, cheap  bazel-bin/day4_large_models/lab --throughput-megatron all$' \
  <<<"$listed" || {
  echo "$listed"
  echo "FAIL: --list does not name the computed Megatron table"
  exit 1
}
sed -i 's/^| megatron-1t | 1008.0 |/| megatron-1t | 1009.0 |/' "$copy/day4_large_models/README.md"
grep -q '^| megatron-1t | 1009.0 |' "$copy/day4_large_models/README.md" || {
  echo "FAIL: the moved-figure fixture did not apply"
  exit 1
}
if moved=$("$figures" --root "$copy" --bin-dir "$root" --sheet day4 --only megatron) ||
  [[ $moved != *"a computed table moved"* ]]; then
  echo "$moved"
  echo "FAIL: a computed table that moved did not fail the run"
  exit 1
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  no_gpu=$("$figures" --root "$root" --bin-dir "$root" --sheet day1 --only resnet50)
  [[ $no_gpu == *"this machine has none: the sheet's table stays"*"; 1 need a GPU" ]] || {
    echo "$no_gpu"
    echo "FAIL: a GPU table on a machine without one"
    exit 1
  }
fi

lab_table=$root/tools/labsheet/lab_table.sh
table=$("$lab_table" "$root/solutions/day1_gpu/lab" \
  '--model tinynet --synthetic 512 --test --test-nsteps 3 --device cpu --no-progress --clip-grad-norm 0.5' \
  images,memory,norms,clipped '' --channels-last) || {
  echo "$table"
  echo "FAIL: lab_table.sh on the day-1 lab"
  exit 1
}
echo "$table"
# shellcheck disable=SC2016  # the backticks are the table's
if ! grep -q '^flags  training images/s  max memory allocated  gradient norm: last, largest  clipped$' \
  <<<"$table" ||
  ! grep -Eq '^`--channels-last`  [0-9,]+  [0-9.]+ MiB  [0-9.]+, [0-9.]+  [0-9]+ of 3 steps$' \
    <<<"$table" || [[ $(wc -l <<<"$table") != 3 ]]; then
  echo "FAIL: lab_table.sh's table"
  exit 1
fi
if refused=$("$lab_table" "$root/solutions/day1_gpu/lab" '' speed '' 2>&1) ||
  [[ $refused != "lab_table: no column 'speed'"* ]]; then
  echo "FAIL: an unknown column: $refused"
  exit 1
fi
echo "figures_test: passed"
