#!/usr/bin/env bash
# The Slurm tooling against a real single-node cluster (slurm/local_cluster.sh; as root): jobs
# submitted through slurm/submit.sh for the day-1 lab, a 2-task day-2 DDP job and a day-3 job
# (its loader worker given a CPU, its checkpoint on a scratch space) complete with their reports,
# so do the four days' own sbatch scripts, and a lab in a container through apptainer's command
# line (a stand-in); a job naming a missing storage space stops with one message; the helper
# refuses bad input and submits nothing; a job signalled with SIGUSR1 checkpoints, requeues
# itself, resumes, and ends with the same checkpoint as an uninterrupted run of the same lab; a
# hyper-parameter study's job array of workers shares one database; the GPU self-test's job
# script runs two of its CPU cases. Needs the labs built (./test.sh runs it after bazel).
set -uo pipefail
cd "$(dirname "$0")/../.."

source slurm/tests/cluster_helpers.sh
scratch=$(mktemp -d)  # the day-3 job's scratch space (slurm/spaces.sh)
cleanup() {  # the test's jobs are all named ci_*
  rm -rf "$scratch"
  rm -f ./ci_*_[0-9]*.out ./ci_*_[0-9]*.err checkpoints/ci_*_[0-9]*.ckpt slurm/jobs/ci_*.sbatch
  rmdir checkpoints slurm/jobs 2>/dev/null
  slurm/local_cluster.sh stop >/dev/null
}
trap cleanup EXIT


# Bad input: a clear message, nothing submitted.
refused() {
  if slurm/submit.sh "$@" >/dev/null 2>&1; then fail "slurm/submit.sh $* was accepted"; fi
}
before=$(squeue -h | wc -l)
refused --gpus 0 day1_gpu
refused --time 1:2:3:4 day1_gpu
refused day9_nothing
refused --account "x y" day1_gpu
refused --account 'x"y' day1_gpu
refused --account "x';reboot" day1_gpu
refused --container /nonexistent/course.sif day1_gpu
refused --container-runtime pyxis --container ./missing.sqsh day1_gpu
refused --container-runtime podman --container localhost/missing:none day1_gpu
refused --container-runtime docker --container localhost/course:test day1_gpu
[[ $(squeue -h | wc -l) -eq $before ]] || fail "a refused submission reached the queue"
echo "ok: bad helper input refused, nothing submitted"

# 1,024 steps: long enough (4 s on the fastest two cores seen, 4,200 images/s) that the
# preemption below, sent 1 s after training starts, lands mid-run.
flags1=(--synthetic 8192 --batch-size 16 --epochs 2 --seed 3)
submit --cpu --gpus 1 --cpus-per-rank 2 --time 10 --name ci_day1 solutions/day1_gpu -- "${flags1[@]}"
day1=$job
submit --cpu --gpus 2 --time 10 --name ci_day2 solutions/day2_ddp -- --synthetic 512 \
  --batch-size 16 --num-workers 1
day2=$job
# Day 3 through the helper: its loader worker's CPU beside the rank's own, whole cores; its
# checkpoint on the site's scratch space. A job naming a space that does not exist stops first.
COURSE_SCRATCH=$scratch submit --cpu --gpus 1 --time 10 --name ci_day3 solutions/day3_data -- --synthetic 256 \
  --batch-size 16 --epochs 1 --num-workers 1 --aug-device --mixup 0.8
day3=$job
COURSE_WORK=/nonexistent/work submit --cpu --gpus 1 --time 10 --name ci_nowork solutions/day1_gpu
nowork=$job
scontrol show job "$day3" | grep -q "CPUs/Task=2 " ||
  fail "day-3 job $day3 was not given 2 CPUs: $(scontrol show job "$day3" | grep CPUs/Task)"
wait_for "$day1" COMPLETED 300
grep -q "epoch 2: .*test accuracy" <<<"$(output_of "$day1")" || fail "day-1 job $day1 has no report"
echo "ok: day-1 job $day1 completed: $(output_of "$day1" | grep "^epoch 2")"
wait_for "$day2" COMPLETED 300
grep -q "on 2 rank(s)" <<<"$(output_of "$day2")" || fail "day-2 job $day2 did not run on 2 ranks"
grep -q "test accuracy" <<<"$(output_of "$day2")" || fail "day-2 job $day2 has no report"
echo "ok: day-2 job $day2 completed on 2 ranks: $(output_of "$day2" | grep "^epoch 1")"
wait_for "$day3" COMPLETED 300
grep -q "^epoch 1: .*test accuracy" <<<"$(output_of "$day3")" || fail "day-3 job $day3 has no report"
echo "ok: day-3 job $day3 completed with 2 CPUs: $(output_of "$day3" | grep "^epoch 1")"
want="storage: checkpoints in $scratch/course/checkpoints (scratch)"
grep -qxF "$want" <<<"$(output_of "$day3")" ||
  fail "day-3 job $day3 did not say its checkpoints are on the scratch space"
[[ -s $scratch/course/checkpoints/ci_day3_$day3.ckpt ]] ||
  fail "day-3 job $day3 left no checkpoint on the scratch space: $(ls -R "$scratch")"
echo "ok: day-3 job $day3's checkpoint on the scratch space"
wait_for "$nowork" FAILED 60
errors=$(cat "$(slurm/submit.sh --logs "$nowork" | tail -1)")
grep -qF "error: COURSE_WORK=/nonexistent/work is no directory" <<<"$errors" ||
  fail "job $nowork did not say its work space is missing: $errors"
echo "ok: job $nowork with a missing work space stopped with one message"

# The sheets' own job scripts ask for a GPU per task (the local cluster's stand-in GPUs here,
# where the labs fall back to the CPU without a driver); the CPUs per task are this machine's.
static1=$(LAB=//solutions/day1_gpu:lab sbatch --parsable --job-name=ci_static1 --cpus-per-task=1 \
  --time=10 slurm/day1_gpu.sbatch --synthetic 256 -b 16 --test --test-nsteps 4 --no-progress \
  --num-workers 1) || fail "sbatch slurm/day1_gpu.sbatch refused"
static2=$(LAB=//solutions/day2_ddp:lab sbatch --parsable --job-name=ci_static2 --cpus-per-task=1 \
  --ntasks-per-node=2 --gpus-per-node=2 --time=10 slurm/day2_ddp.sbatch --synthetic 256 -b 16 \
  --test --test-nsteps 4 --no-progress --num-workers 1) || fail "sbatch slurm/day2_ddp.sbatch refused"
static3=$(LAB=//solutions/day3_data:lab sbatch --parsable --job-name=ci_static3 --cpus-per-task=1 \
  --ntasks-per-node=2 --gpus-per-node=2 --time=10 slurm/day3_data.sbatch --synthetic 256 -b 16 \
  --test --test-nsteps 4 --no-progress --num-workers 0) || fail "sbatch slurm/day3_data.sbatch refused"
static4=$(LAB=//solutions/day4_large_models:lab sbatch --parsable --job-name=ci_static4 --nodes=1 \
  --cpus-per-task=1 --ntasks-per-node=2 --gpus-per-node=2 --time=10 slurm/day4_large_models.sbatch \
  --sharding zero2 --test --test-nsteps 3 --batch-size 4 --context 32 --sample-tokens 0) ||
  fail "sbatch slurm/day4_large_models.sbatch refused"
for job in "$static1" "$static2" "$static3" "$static4"; do
  scontrol show job "$job" | grep -qE "TresPerNode=(gres/|gres:)?gpu:[12]" ||
    fail "job $job asks for no GPU: $(scontrol show job "$job" | grep -i tres)"
done
wait_for "$static1" COMPLETED 300
wait_for "$static2" COMPLETED 300
grep -q "on 2 rank(s)" <<<"$(output_of "$static2")" || fail "job $static2 did not run on 2 ranks"
wait_for "$static3" COMPLETED 300
grep -q "training smallnet on 2 ranks" <<<"$(output_of "$static3")" ||
  fail "job $static3 did not run on 2 ranks: $(output_of "$static3")"
wait_for "$static4" COMPLETED 300
grep -q "zero2 over 2 rank(s)" <<<"$(output_of "$static4")" ||
  fail "job $static4 did not run ZeRO-2 on 2 ranks: $(output_of "$static4")"
grep -q "training performance" <<<"$(output_of "$static4")" || fail "job $static4 has no report"
echo "ok: the four days' sbatch scripts ran with a GPU per task requested"

# A lab in a container (--container): a stand-in for Apptainer on the job's PATH logs how the
# ranks enter the image and runs the command with the image's /opt/course as this repository.
stub=$(mktemp -d)
cat >"$stub/apptainer" <<STUB
#!/usr/bin/env bash
echo "apptainer \$*" >>"$stub/calls.log"
[[ \$1 == exec ]] && shift
while [[ \$1 == --* ]]; do [[ \$1 == --nv ]] && shift || shift 2; done
[[ -f \$1 ]] || { echo "apptainer stand-in: no image \$1" >&2; exit 1; }
shift
command=\${1/#\/opt\/course/$PWD}
shift
exec "\$command" "\$@"
STUB
chmod +x "$stub/apptainer"
touch "$stub/course.sif"
PATH="$stub:$PATH" submit --cpu --gpus 1 --time 10 --name ci_container --container \
  "$stub/course.sif" solutions/day1_gpu -- --synthetic 256 --batch-size 32 --test --test-nsteps 3
wait_for "$job" COMPLETED 300
grep -q "training performance" <<<"$(output_of "$job")" || fail "container job $job has no report"
grep -qF "apptainer exec --nv --bind $PWD:$PWD --pwd $PWD $stub/course.sif /opt/course/bazel-bin/solutions/day1_gpu/lab" \
  "$stub/calls.log" || fail "container job $job did not enter the image: $(cat "$stub/calls.log")"
echo "ok: container job $job ran the image's lab through apptainer exec --nv"
rm -rf "$stub"

# The GPU self-test's job script, two of its CPU cases here, one process and two ranks (a GPU node
# runs the GPU ones; tools/gpu_selftest/bundle_test.sh runs every CPU case).
selftest=$(sbatch --parsable --job-name=ci_selftest --cpus-per-task=2 slurm/gpu_selftest.sbatch \
  --cpu --cases '@(day 1: f32|day 2: *)') || fail "sbatch slurm/gpu_selftest.sbatch refused"
wait_for "$selftest" COMPLETED 600
grep -qE "^selftest: 2 passed, 0 skipped \(one GPU\), 0 failed, 0 cut by the deadline, [0-9]+ left out by --cases$" \
  "ci_selftest_$selftest.out" ||
  fail "self-test job $selftest: $(tail -5 "ci_selftest_$selftest.out")"
echo "ok: self-test job $selftest: $(tail -1 "ci_selftest_$selftest.out")"

# Preemption: the same day-1 run, uninterrupted here and signalled on the cluster.
straight=$(mktemp --suffix=.ckpt)
trap 'rm -f "$straight"; cleanup' EXIT
OMP_NUM_THREADS=2 bazel-bin/solutions/day1_gpu/lab "${flags1[@]}" --no-progress \
  --chkpt "$straight" >/dev/null 2>&1 || fail "the uninterrupted day-1 run failed"
submit --cpu --gpus 1 --cpus-per-rank 2 --time 10 --name ci_preempt solutions/day1_gpu -- \
  "${flags1[@]}"
preempted=$job
wait_for "$preempted" RUNNING 120
deadline=$((SECONDS + 120))
until grep -q "^training" <<<"$(output_of "$preempted" 2>/dev/null)"; do
  ((SECONDS < deadline)) || fail "job $preempted did not start training"
  sleep 0.5
done
sleep 1
scancel --signal=USR1 "$preempted"
wait_for "$preempted" COMPLETED 400
log=$(output_of "$preempted"; cat "ci_preempt_$preempted.err" 2>/dev/null)
grep -q "preempted: SIGUSR1 after step" <<<"$log" || fail "job $preempted was not preempted: $log"
grep -q "resuming from" <<<"$log" || fail "job $preempted did not resume: $log"
ckpt="checkpoints/ci_preempt_$preempted.ckpt"
cmp "$straight" "$ckpt" || fail "the requeued job's final checkpoint differs from the uninterrupted run's"
echo "ok: job $preempted preempted ($(grep -o "SIGUSR1 after step [0-9]*" <<<"$log")), requeued," \
  "resumed; its final checkpoint equals the uninterrupted run's"
# A hyper-parameter study's workers as a job array on one SQLite database: 4 workers of 10
# trials each, 2 at a time on this machine's 2 CPUs, no trial lost or run twice.
study_dir=$(mktemp -d)
trap 'rm -rf "$straight" "$study_dir"; cleanup' EXIT
hpo=bazel-bin/solutions/day3_data/hpo
"$hpo" create --db "$study_dir/ci.db" --study ci --function himmelblau --seed 5 >/dev/null ||
  fail "hpo create failed"
array=$(HPO=//solutions/day3_data:hpo sbatch --parsable --array=0-3 --cpus-per-task=1 \
  --job-name=ci_hpo --time=5 slurm/hpo.sbatch --db "$study_dir/ci.db" --study ci --trials 10) ||
  fail "the HPO job array was not submitted"
deadline=$((SECONDS + 300))
while [[ -n $(squeue -h -j "$array" 2>/dev/null) ]]; do
  ((SECONDS < deadline)) || fail "HPO job array $array still queued or running after 300 s"
  sleep 1
done
status=$("$hpo" status --db "$study_dir/ci.db" --study ci) || fail "hpo status failed"
grep -q "40 trials: 40 complete, 0 pruned, 0 failed, 0 running" <<<"$status" ||
  fail "the job array's study is not 40 complete trials: $status"
for task in 0 1 2 3; do
  [[ $(grep -c "complete:" "ci_hpo_${array}_${task}.out") -eq 10 ]] ||
    fail "worker $task of job array $array did not run 10 trials"
done
echo "ok: HPO job array $array: 4 workers, $(grep -o "40 trials.*" <<<"$status");" \
  "$(grep -o "best: trial [0-9]*, value [0-9.e-]*" <<<"$status")"
echo "slurm tests passed"
