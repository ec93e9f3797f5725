#!/usr/bin/env bash
# The class grader's --slurm mode on the local Slurm cluster (as root; slurm/local_cluster.sh):
# two trainees of day 1 (one complete, one the untouched stubs) graded as a job array, one task
# each, each its own build log, and the scorecard gathered by the job that follows the array;
# two hand-ins of one name refused before anything is submitted. Run by ./test.sh after
# the other Slurm tests.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PMIX_MCA_psec=native

source slurm/tests/cluster_helpers.sh
class=$(mktemp -d)
cleanup() {
  rm -rf "$class"
  slurm/local_cluster.sh stop >/dev/null
}
trap cleanup EXIT

bazel build //tools/grade >/dev/null 2>&1 || fail "the grader does not build"
mkdir "$class/complete" "$class/stubs"
cp solutions/day1_gpu/exercises.cc "$class/complete/"
cp day1_gpu/exercises.cc "$class/stubs/"
out="$class/grades"
# Two hand-ins of one name: refused before anything is submitted.
if twice=$(bazel-bin/tools/grade/grade --day day1_gpu --slurm --out "$out" --root "$PWD" \
  "$class/complete" "complete=$class/stubs" 2>&1); then
  fail "two hand-ins named alike were submitted: $twice"
fi
grep -q "two hand-ins are named complete" <<<"$twice" || fail "the refusal said: $twice"
[[ -z $(squeue -h) ]] || fail "a refused submission left jobs: $(squeue -h)"
submitted=$(bazel-bin/tools/grade/grade --day day1_gpu --slurm --time 15 \
  --out "$out" --root "$PWD" "$class/complete" "$class/stubs") || fail "grade --slurm: $submitted"
echo "$submitted"
array=$(sed -n 's/^submitted job array \([0-9]*\) .*/\1/p' <<<"$submitted")
gather=$(sed -n 's/.* the scorecard.s job \([0-9]*\);.*/\1/p' <<<"$submitted")
[[ -n $array && -n $gather ]] || fail "no job ids in: $submitted"
[[ $(squeue -h -r -j "$array" | wc -l) -le 2 ]] || fail "the array is not one task per trainee"
wait_for "$gather" COMPLETED 900
csv="$out/scorecard.csv"
[[ -f $csv ]] || fail "no scorecard; the jobs said: $(cat "$out"/slurm-*.out)"
for e in TP1.1 TP1.2 TP1.3 TP1.4 TP1.5; do
  grep -q "^complete,$e,passed," "$csv" || fail "complete $e: $(cat "$csv")"
  grep -q "^stubs,$e,not attempted," "$csv" || fail "stubs $e: $(cat "$csv")"
done
[[ $(ls "$out"/results/*.csv | wc -l) == 2 ]] || fail "not one result per task"
for task in 0 1; do  # each task's build log its own
  [[ -s $out/build-task-$task.log ]] || fail "task $task left no build log of its own"
done
[[ ! -e $out/build.log ]] || fail "a task wrote the shared build.log"
[[ -f $out/index.html ]] || fail "no scorecard page"
echo "ok: job array $array graded 2 trainees, one per task; job $gather gathered the scorecard"
echo "grade slurm tests passed"
