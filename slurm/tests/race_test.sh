#!/usr/bin/env bash
# The day-3 race on a real single-node cluster (slurm/local_cluster.sh; as root), as an
# instructor runs it: two recipes entered (each checked by a --test run), an over-budget recipe
# and bad flags refused with nothing entered, the entries launched as jobs with the course's
# log names (2 ranks each, DDP), one of them preempted (it checkpoints, requeues, resumes and finishes every
# epoch), then the leaderboard, its page rendered by headless Chromium. Needs the race lab and
# the leaderboard built (./test.sh runs it after bazel).
set -uo pipefail
cd "$(dirname "$0")/../.."

source slurm/tests/cluster_helpers.sh
RACE_DIR=$(mktemp -d)
export RACE_DIR RACE_LAB=//solutions/day3_data:race RACE_FLAGS="--budget-s 300 --validation-s 3"
cleanup() {
  scancel --name=race_alice --name=race_bob 2>/dev/null
  rm -rf "$RACE_DIR" checkpoints/race_alice_[0-9]*.ckpt checkpoints/race_bob_[0-9]*.ckpt
  rmdir checkpoints 2>/dev/null
  slurm/local_cluster.sh stop >/dev/null
}
trap cleanup EXIT

data=(--train-subset 3000 --num-workers 1 --test-nsteps 5)
slurm/race.sh enter alice -- "${data[@]}" --epochs 3 --lr 0.2 || fail "alice was not entered"
slurm/race.sh enter bob -- "${data[@]}" --epochs 2 --optimizer adamw --lr 0.003 ||
  fail "bob was not entered"
refused() {  # refused TEXT ARGS...: race.sh ARGS fails with TEXT and enters nothing
  local out
  if out=$(slurm/race.sh "${@:2}" 2>&1); then fail "slurm/race.sh ${*:2} was accepted"; fi
  grep -qF -- "$1" <<<"$out" || fail "slurm/race.sh ${*:2} said: $out"
}
refused "eligible to run" enter greedy -- "${data[@]}" --epochs 5000
refused "Could not convert: --lr = abc" enter typo -- "${data[@]}" --lr abc
refused "--metrics is the race's to set" enter sneaky -- --metrics x.jsonl
refused "--test-subset=500 is the race's to set" enter narrow -- --test-subset=500
refused "entry name" enter "bad name" -- "${data[@]}"
[[ $(ls "$RACE_DIR/entries") == $'alice.flags\nbob.flags' ]] ||
  fail "entries: $(ls "$RACE_DIR/entries")"
echo "ok: two recipes entered; over-budget, mistyped and reserved flags refused, nothing entered"

out=$(slurm/race.sh launch --cpu --gpus 2 --cpus-per-rank 1 --time 10) ||
  fail "launch failed: $out"
alice=$(sed -n 's/^launched alice: job \([0-9]*\)$/\1/p' <<<"$out")
bob=$(sed -n 's/^launched bob: job \([0-9]*\)$/\1/p' <<<"$out")
[[ -n $alice && -n $bob ]] || fail "no job ids in: $out"
log=$(log_of "$alice")
wait_for "$alice" RUNNING 120
deadline=$((SECONDS + 120))
until (($(grep -c "^training" "$log" 2>/dev/null) >= 2)); do  # the timing run's, then the race's
  ((SECONDS < deadline)) || fail "alice's job $alice did not start training: $(cat "$log")"
  sleep 0.5
done
sleep 1  # mid-run, on a fast machine too
scancel --signal=USR1 "$alice"
wait_for "$alice" COMPLETED 400
wait_for "$bob" COMPLETED 400
grep -q "preempted: SIGUSR1 after step" "$log" "${log%.out}.err" ||
  fail "alice was not preempted: $(cat "$log")"
grep -q "resuming from" "$log" || fail "alice did not resume: $(cat "$log")"
for epoch in 1 2 3; do
  grep -q "\"epoch\":$epoch," "$RACE_DIR/runs/alice.jsonl" || fail "alice has no epoch $epoch"
done
bob_log=$(log_of "$bob")
grep -q "replicas: identical weights on all 2 ranks" "$bob_log" ||
  fail "bob did not train on 2 ranks in step: $(cat "$bob_log")"
echo "ok: jobs $alice and $bob ran on 2 ranks each; alice was preempted, resumed and ran its 3 epochs"

listed=$(slurm/race.sh list)
grep -q "^alice .*(3 epoch(s) run)" <<<"$listed" || fail "list: $listed"
slurm/race.sh board --title "CI race" || fail "the board was not made"
board=$RACE_DIR/board
[[ $(wc -l <"$board/board.csv") == 3 ]] || fail "board.csv: $(cat "$board/board.csv")"
grep -qE "^\| 1 \| (alice|bob) " "$board/board.md" || fail "board.md: $(cat "$board/board.md")"
chromium=(chromium --headless --no-sandbox --disable-gpu --window-size=1400,1000)
dom=$(timeout 120 "${chromium[@]}" --dump-dom "file://$board/index.html" 2>/dev/null) ||
  fail "chromium could not open the board"
[[ $(grep -o "<tr" <<<"$dom" | wc -l) == 3 ]] || fail "the rendered table: $dom"
grep -q "<td>alice</td>" <<<"$dom" || fail "alice is not on the rendered board"
# The page itself, with a script added that lists its images' decoded sizes once loaded.
sed 's|</body>|<script>window.onload = () => { const p = document.createElement("pre");\
p.id = "decoded"; p.textContent = [...document.images].map(i => i.naturalWidth + "x" +\
i.naturalHeight).join(" "); document.body.append(p); };</script></body>|' \
  "$board/index.html" >"$board/check.html"
dom=$(timeout 120 "${chromium[@]}" --virtual-time-budget=5000 --dump-dom \
  "file://$board/check.html" 2>/dev/null) || fail "chromium could not open the checked page"
grep -q '<pre id="decoded">900x540 900x540</pre>' <<<"$dom" ||
  fail "the page's plots did not load: $(grep -o '<pre id="decoded">.*</pre>' <<<"$dom")"
timeout 120 "${chromium[@]}" --screenshot="$board/shot.png" "file://$board/index.html" \
  >/dev/null 2>&1 || fail "chromium could not take a screenshot"
echo "ok: the board ranks both entries; headless Chromium renders its page, both plots decoded" \
  "(900x540), and takes a screenshot"

echo "race tests passed"
