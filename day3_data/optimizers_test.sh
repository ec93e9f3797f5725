#!/usr/bin/env bash
# The optimizer comparison as trainees run it: two recipes at two batches on small synthetic
# data write the table, the CSV (a row per epoch) and a plot per batch; the trainee's build runs
# it too (no exercise on its path); bad input is refused with one message before any run.
set -uo pipefail
source "$1"  # expect
trainee=$2
solution=$3
lab="--synthetic 64 --epochs 2 --device cpu --num-workers 1 --no-progress"
out=$TEST_TMPDIR/comparison

expect 0 "| lion | lion | cosine to lr x 0.2 | 32 | 0.002 | 0.5 | 2 |" "$solution" \
  --recipes one-cycle,lion --small-batch 8 --large-batch 32 --lab="$lab" --out "$out"
[[ $(wc -l <"$out/optimizers.csv") == 9 ]] || { echo "FAILED: optimizers.csv rows"; exit 1; }
[[ $(wc -l <"$out/optimizers.md") == 6 ]] || { echo "FAILED: optimizers.md rows"; exit 1; }
for png in batch_8.png batch_32.png; do
  [[ $(head -c 4 "$out/$png" | tail -c 3) == PNG ]] || { echo "FAILED: no $png"; exit 1; }
done
expect 0 "| constant | sgd | constant | 16 | 0.1 |" env BUILD_WORKING_DIRECTORY="$TEST_TMPDIR" \
  "$trainee" --recipes constant --small-batch 8 --large-batch 16 --lab="$lab" --out relative
[[ -f $TEST_TMPDIR/relative/optimizers.csv ]] || { echo "FAILED: --out not relative"; exit 1; }

expect 1 "unknown recipe 'adam'" "$solution" --recipes adam --lab="$lab" --out "$out"
expect 1 "--large-batch must be larger than --small-batch" "$solution" --small-batch 64 \
  --large-batch 64 --lab="$lab" --out "$out"
expect 1 "no --test or --findlr" "$solution" --lab="$lab --test" --out "$out"
expect 1 "--lab: --lr is set by each recipe" "$solution" --lab="$lab --lr=9" --out "$out"
expect 109 "--bogus" "$solution" --lab="$lab --bogus" --out "$out"
expect 1 "--warmup-epochs must be from 0 to --epochs, got 3" "$solution" --warmup-epochs 3 \
  --lab="$lab" --out "$out"
touch "$TEST_TMPDIR/file"
expect 1 "file" "$solution" --lab="$lab" --out "$TEST_TMPDIR/file/out"
