#!/usr/bin/env bash
# The race lab and its leaderboard as trainees and instructors run them: --test prints the
# epochs the budget allows (validation dominates here: 10000 s / (1000 s + the steps' few
# seconds) = 10), more epochs are refused with that figure, a run within the budget writes its
# recipe and a record per epoch (a Vision Transformer's too), the leaderboard tool ranks the
# runs; bad input is one message.
set -uo pipefail
source "$1"  # expect
trainee=$2
solution=$3
leaderboard=$4
recipe=(--synthetic 256 --batch-size 16 --device cpu --num-workers 1 --no-progress
  --budget-s 10000 --validation-s 1000 --test-nsteps 4)
runs=$TEST_TMPDIR/runs
mkdir -p "$runs"

expect 0 "eligible to run 10 epochs" "$solution" "${recipe[@]}" --test
expect 0 "race budget: 10000 s on 1 GPU(s), 1000 s of validation per epoch" "$trainee" \
  "${recipe[@]}" --test
expect 1 "--epochs 11 is over the race's budget (10000 s on 1 GPU(s), 1000 s of validation" \
  "$solution" "${recipe[@]}" --epochs 11
expect 1 "this recipe is eligible to run 10 epochs" "$solution" "${recipe[@]}" --epochs 11 --test
expect 0 "epoch 2: " "$solution" "${recipe[@]}" --epochs 2 --lr 0.05 --metrics "$runs/alice.jsonl"
[[ $(wc -l <"$runs/alice.jsonl") == 3 ]] || { echo "FAILED: alice.jsonl lines"; exit 1; }
head -1 "$runs/alice.jsonl" | grep -q '"eligible_epochs":10' || { echo "FAILED: header"; exit 1; }
head -1 "$runs/alice.jsonl" | grep -q '"lr":0.05' || { echo "FAILED: recipe's lr"; exit 1; }
grep -q '"epoch":2' "$runs/alice.jsonl" || { echo "FAILED: no epoch 2 record"; exit 1; }
expect 0 "epoch 1: " "$solution" "${recipe[@]}" --optimizer adamw --lr 0.003 \
  --metrics "$runs/bob.jsonl"
expect 0 "epoch 1: " "$solution" "${recipe[@]}" --model vit-micro --optimizer adamw --lr 0.002 \
  --metrics "$runs/dave.jsonl"
expect 0 "| bob | smallnet | adamw | 16 | 28 | 0.003 | 0 |" "$leaderboard" --runs "$runs" \
  --out "$TEST_TMPDIR/board"
expect 0 "| dave | vit-micro | adamw | 16 | 28 | 0.002 | 0 |" "$leaderboard" --runs "$runs" \
  --out "$TEST_TMPDIR/board"
for file in board.md board.csv index.html validation.png training.png; do
  [[ -s $TEST_TMPDIR/board/$file ]] || { echo "FAILED: no board/$file"; exit 1; }
done
[[ $(wc -l <"$TEST_TMPDIR/board/board.csv") == 4 ]] || { echo "FAILED: board.csv rows"; exit 1; }

expect 1 "--budget-s and --race-gpus must be positive" "$solution" "${recipe[@]:0:9}" --budget-s 0
expect 1 "the race trains a recipe: run --findlr with //day3_data:lab" "$solution" \
  "${recipe[@]}" --findlr
expect 1 "--metrics /no/such/dir/m.jsonl: folder /no/such/dir does not exist" "$solution" \
  "${recipe[@]}" --metrics /no/such/dir/m.jsonl
expect 1 "timing a step needs at least 2 steps" "$solution" "${recipe[@]:0:13}" --test-nsteps 1
expect 1 "the runs folder /no/such/runs does not exist" "$leaderboard" --runs /no/such/runs
echo '{"epoch": 1' >"$runs/carol.jsonl"
expect 1 "carol.jsonl:1: not a race metrics line" "$leaderboard" --runs "$runs" \
  --out "$TEST_TMPDIR/board"
