#!/usr/bin/env bash
# The GPU self-test of a cluster's GPU node: run it first on a new cluster. It runs every test
# case parametrised on a device (the GPU's cases against the CPU path), the GPU-only tests, and
# a short run of each day's lab on the GPU (day 1 f32, AMP f16 + channels-last, CUDA graphs;
# DDP, ZeRO-3 (eager and as one graph), 1F1B and tensor parallelism over NCCL on every visible
# GPU; day 1's and day 4's steps 2..N counted wait-free, with --cpu on the simulated
# accelerator), then prints one table (case, device, result, seconds) and exits non-zero if any
# case failed. A GPU case that skips for want of a GPU counts as failed here: on a GPU node it
# must run. The multi-rank lab cases compare with one process accumulating the same
# micro-batches; on a node of one GPU two ranks share it (only the cases that need a GPU per
# rank, NCCL's own test and the step of ZeRO-3 as one CUDA graph, are listed as skipped).
#   run_selftest.sh [--cpu] [--cases PATTERN] [--root DIR] [--logs DIR] [--case-limit SECONDS]
#                   [--deadline EPOCH_SECONDS]
#     --cpu       the same cases on the CPU (2 MPI ranks stand in for GPUs): the bundle's own test
#     --cases PATTERN  only the cases whose name matches the bash pattern (extended: e.g.
#                 '@(day 1: f32|day 2: *)'); the summary counts the others as left out
#     --root DIR  where the binaries are (default: this script's runfiles, or its folder in a
#                 bundle made by make_bundle.sh)
#     --logs DIR  keep every case's whole output there, one file per case (default: failed
#                 cases' last lines only)
#     --case-limit SECONDS  a case that runs longer is stopped and fails (default 600)
#     --deadline EPOCH_SECONDS  no case runs past it (`date +%s`): a case cut by it, or not
#                 started for want of time, is listed as CUT, neither passed nor failed (the exit
#                 status is then 124 where no case failed)
# MPIRUN overrides the launcher of multi-rank cases (default: mpirun; e.g. MPIRUN="srun").
set -uo pipefail
shopt -s extglob

device=cuda
root=""
logs=""
cases="*"
CASE_LIMIT=600
deadline=""
while (($#)); do
  case $1 in
    --case-limit) CASE_LIMIT=$2; shift ;;
    --deadline) deadline=$2; shift ;;
    --cpu) device=cpu ;;
    --root) root=$2; shift ;;
    --logs) logs=$2; shift ;;
    --cases) cases=$2; shift ;;
    -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "run_selftest.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
here=$(cd "$(dirname "$0")" && pwd)
if [[ -z $root ]]; then
  if [[ -d $0.runfiles/course ]]; then root=$0.runfiles/course; else root=$here; fi
fi
[[ -x $root/tools/gpu_selftest/day1_gpu_lab ]] || {
  echo "run_selftest.sh: no lab binaries under $root (build //tools/gpu_selftest or unpack a bundle)" >&2
  exit 2
}
# A bundle carries its own shared libraries (the CUDA and driver libraries come from the node),
# and Open MPI too when made --with-mpi: relocated here, its plugins found beside it (a process
# started without mpirun needs no daemon: common/parallel/comm/communicator.cc).
[[ -d $root/lib ]] && export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [[ -d $root/mpi ]]; then
  export OPAL_PREFIX=$root/mpi PATH=$root/mpi/bin:$PATH
  export PMIX_MCA_mca_base_component_path=$root/mpi/pmix
fi

if [[ $device == cuda ]]; then
  # Before any case: the node's driver, cuDNN and NCCL against what the build needs (one message
  # naming what is missing), then the GPUs CUDA may use (CUDA_VISIBLE_DEVICES, the job's cgroup:
  # on a shared node nvidia-smi lists GPUs this job may not use, and two ranks would share one).
  "$root/tools/info" --check-gpu >&2 || {
    echo "run_selftest.sh: this node cannot run the bundle's GPU code (above); --cpu runs the CPU cases" >&2
    exit 2
  }
  gpus=$("$root/tools/info" --gpus)
  ranks=$gpus
  filter='*cuda*:*Gpu*:*GPU*'
  where="$gpus GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | xargs)"
else
  ranks=2
  filter='*cpu*'
  where="CPU"
fi
mpirun_cmd=(${MPIRUN:-mpirun})
if [[ -z ${MPIRUN:-} ]]; then
  mpirun_cmd+=(--oversubscribe --bind-to none)
  [[ $(id -u) -eq 0 ]] && mpirun_cmd+=(--allow-run-as-root)
fi

# The cases' data (day 3's JPEGs) in a scratch folder of its own, never among the logs that
# come back from a node.
scratch=$(mktemp -d)
if [[ -n $logs ]]; then
  log=$logs
  mkdir -p "$log" || exit 2
  trap 'rm -rf "$scratch"' EXIT
else
  log=$(mktemp -d)
  trap 'rm -rf "$log" "$scratch"' EXIT
fi
results=()
failed=0
skipped=0
left_out=0
cut=0

case_log() { echo "$log/$(tr -c 'A-Za-z0-9_' _ <<<"$1").log"; }  # case_log NAME: its output

selected() {  # selected NAME: whether --cases takes the case (counted as left out if not)
  # shellcheck disable=SC2053 # --cases is a pattern
  [[ $1 == $cases ]] && return 0
  left_out=$((left_out + 1))
  return 1
}

# record NAME DEVICE COMMAND...: runs the case (a hung one ends after $CASE_LIMIT seconds, as a
# failure; one the deadline cuts, or leaves no time to start, as CUT), keeps its output, adds a
# table row.
record() {
  local name=$1 on=$2 start end status out limit=$CASE_LIMIT result=PASS
  shift 2
  selected "$name" || return 0
  out=$(case_log "$name")
  local left=$((${deadline:-0} - $(date +%s)))
  [[ -n $deadline ]] && ((left < limit)) && limit=$left
  start=$(date +%s%N)
  if ((limit < 5)); then
    echo "(not run: the self-test's deadline is reached)" >"$out"
    status=124 result=CUT
  else
    timeout --kill-after=5 "$limit" "$@" >"$out" 2>&1
    status=$?
  fi
  end=$(date +%s%N)
  if [[ $result != CUT ]] && ((status == 124 || status == 137)); then
    echo "(stopped after $limit s)" >>"$out"
    ((limit < CASE_LIMIT)) && result=CUT
  fi
  if [[ $result == CUT ]]; then
    cut=$((cut + 1))
  elif ((status != 0)); then
    result=FAIL
  elif [[ $device == cuda ]] && grep -q "no GPU visible" "$out"; then
    result=FAIL  # a skipped GPU case on a GPU node
  fi
  if [[ $result == FAIL ]]; then
    failed=$((failed + 1))
    echo "---- $name (exit $status): last lines of its output" >&2
    tail -n 15 "$out" >&2
  fi
  local tenths=$(((end - start) / 100000000))
  results+=("$(printf '%-44s %-10s %-5s %6d.%d' "$name" "$on" "$result" $((tenths / 10)) $((tenths % 10)))")
}

# Every test binary with device cases (one per package), filtered to this device's cases.
for package in common/tensor/tests common/kernels/tests common/optim/tests common/nn/tests \
  common/data/tests; do
  record "$package" "$device" "$root/$package/tests" --gtest_filter="$filter" --gtest_brief=1
done

# Each day's lab, short runs on this device; those with a loss to compare run once more on the
# CPU with the same flags and pass only when both end their epoch with train and test losses
# within the case's relative tolerance. The GPU sums in other orders, convolves in TF32 and
# rounds bf16/f16 otherwise, which moves a short run's losses by well under a percent; a wrong
# kernel moves them by far more (or to NaN). With --cpu the simulated accelerator stands in.
labs=$root/tools/gpu_selftest
lab1=$labs/day1_gpu_lab
accelerator=$([[ $device == cuda ]] && echo cuda || echo sim)
# The last "epoch N: train loss A, test loss B, ..." line of a run's output as "A B".
last_losses() {
  sed -n "s/^epoch [0-9]*: train loss \([^,]*\), test loss \([^,]*\),.*/\1 \2/p" | tail -n 1
}
# losses_within TOLERANCE NAME_A OUTPUT_A NAME_B OUTPUT_B: prints both runs' last losses and
# succeeds when both are numbers and A's are within the relative TOLERANCE of B's.
losses_within() {
  local a b c d
  read -r a b <<<"$(last_losses <<<"$3")"
  read -r c d <<<"$(last_losses <<<"$5")"
  echo "losses: $2 train ${a:-none}, test ${b:-none}; $4 train ${c:-none}, test ${d:-none};" \
    "relative tolerance $1"
  awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v t="$1" '
    function number(x) { return x ~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/ }
    function close_to(x, y) { return (x > y ? x - y : y - x) <= t * (y < 0 ? -y : y) }
    BEGIN { exit !(number(a) && number(b) && number(c) && number(d) &&
                   close_to(a + 0, c + 0) && close_to(b + 0, d + 0)) }'
}
export -f last_losses losses_within
compared() {  # compared NAME TOLERANCE BINARY ARGS...: on the accelerator and on the CPU
  local name=$1 tolerance=$2
  shift 2
  # shellcheck disable=SC2016  # the inner shell expands them
  record "$name" "$accelerator/cpu" bash -c '
    accelerator=$1 tolerance=$2
    shift 2
    on_device=$("$@" --device "$accelerator" 2>&1) || { echo "$on_device"; exit 1; }
    echo "$on_device"
    on_cpu=$("$@" --device cpu 2>&1) || { echo "on the CPU:"; echo "$on_cpu"; exit 1; }
    losses_within "$tolerance" "on $accelerator" "$on_device" "on the CPU" "$on_cpu"
  ' _ "$accelerator" "$tolerance" "$@"
}
epoch=(--synthetic 512 --batch-size 64 --epochs 1 --no-progress)
short=(--synthetic 512 --batch-size 64 --test --test-nsteps 20 --no-progress --device "$device")
compared "day 1: f32" 0.02 "$lab1" "${epoch[@]}"
compared "day 1: amp f16, channels-last, accumulated, clipped" 0.05 "$lab1" "${epoch[@]}" \
  --amp --amp-dtype f16 --channels-last --accumulate 2 --clip-grad-norm 1
compared "day 1: cuda graphs, bf16" 0.05 "$lab1" "${epoch[@]}" --cuda-graphs --amp
# The profiler's ranges (on a GPU NVTX ranges too, timed by device events) in a Chrome trace.
# shellcheck disable=SC2016  # the inner shell expands them
record "day 1: profiled steps, their trace written" "$device" bash -c \
  '"$1" "${@:3}" --profile "$2" && grep -q "\"ph\":\"X\"" "$2"' _ "$lab1" "$log/day1_trace.json" \
  "${short[@]}"
compared "day 3: augmentation on the device" 0.02 "$labs/day3_data_lab" "${epoch[@]}" --augment \
  --auto-augment randaugment --aug-device --translate 2 --brightness 0.2
# No host wait in steps 2..N: on the GPU as the labs count them (the simulated accelerator's count
# with --cpu, as in CI); tools/gpu_selftest/host_waits_on_gpu.sh adds nsys's count of CUDA calls.
wait_free() {  # wait_free NAME BINARY ARGS...: the run says "... steps 2..N: 0 at most on a rank"
  local name=$1
  shift
  # shellcheck disable=SC2016  # the inner shell expands them
  record "$name" "$accelerator" bash -c \
    'out=$("$@" 2>&1); s=$?; echo "$out"; ((s == 0)) &&
     grep -qE "host waits for .* steps 2\.\.[0-9]+: 0 at most on a rank" <<<"$out"' _ "$@"
}
wait_free "day 1: no host wait, f16 graph channels-last" "$lab1" --synthetic 1280 \
  --batch-size 64 --test --test-nsteps 20 --no-progress --device "$accelerator" --amp \
  --amp-dtype f16 --channels-last --cuda-graphs
# Day 3's GPU data path: ImageNet-shaped JPEGs (200-500 px) decoded by nvJPEG and cropped to
# 224 px on the device, every image counted by its decoder; no host wait in a step. (With --cpu:
# the simulated accelerator, OpenCV standing in for nvJPEG.) The decoders against OpenCV's are
# common/data/tests' DeviceDecodeTest cases above.
# Made from the bundle's own Fashion-MNIST where it has one (a node without Debian's dataset).
source_images=()
[[ -d $root/fashion-mnist ]] && source_images=(--from "$root/fashion-mnist")
if ! "$root/tools/make_dataset" "${source_images[@]}" --imagenet-shaped 100 --to folder \
  --train 256 --val 64 --out "$scratch/imagenet_shaped" >"$log/make_dataset.txt" 2>&1; then
  echo "run_selftest.sh: the day-3 cases' JPEGs could not be made:" >&2
  tail -n 5 "$log/make_dataset.txt" >&2
  failed=$((failed + 1))
fi
jpegs=(--data-dir "$scratch/imagenet_shaped" --image-size 224 --batch-size 32 --no-progress
  --device "$accelerator" --decode-device gpu --amp --channels-last)
# shellcheck disable=SC2016  # the inner shell expands them
record "day 3: JPEGs decoded on the device, counted" "$accelerator" bash -c \
  'out=$("$@" 2>&1); s=$?; echo "$out"; ((s == 0)) && grep -qE "decoded on .*: [0-9]+ by .*, 0 by the loader.s workers" <<<"$out"' \
  _ "$labs/day3_data_lab" "${jpegs[@]}" --epochs 1
wait_free "day 3: no host wait, JPEGs decoded on the device" "$labs/day3_data_lab" "${jpegs[@]}" \
  --test --test-nsteps 12
# The loader's ceiling at 224 px (day 3's DALI section): the workers decoding with every core
# against nvJPEG on the device, on the same JPEGs, and on a GPU the ResNet-50 step fed by the
# device path; their images/s close the output.
ceiling=(--data-dir "$scratch/imagenet_shaped" --augment --image-size 224 --batch-size 64 --epochs 2)
record "day 3: loader, CPU workers" cpu "$root/bench/compare/loader_throughput" "${ceiling[@]}" \
  --num-workers "$(nproc)"
record "day 3: loader, decoded on the device" "$accelerator" \
  "$root/bench/compare/loader_throughput" "${ceiling[@]}" --num-workers 1 --decode-device gpu \
  --device "$accelerator"
if [[ $device == cuda ]]; then
  record "day 3: ResNet-50 step, decoded on the device" cuda "$labs/day3_data_lab" \
    "${jpegs[@]}" --model resnet50 --batch-size 64 --test --test-nsteps 12
fi
text=()
[[ -d $root/text ]] && text=(--text-dir "$root/text")  # a bundle's own text
gpt_epoch=(--steps-per-epoch 6 --epochs 1 --val-fraction 0.01 --no-progress --batch-size 8
  --sample-tokens 0 --context 64 "${text[@]}")
compared "day 4: GPT, amp bf16, one process" 0.05 "$labs/day4_large_models_lab" \
  "${gpt_epoch[@]}" --amp
compared "day 4: Llama, amp bf16, one process" 0.05 "$labs/day4_large_models_lab" \
  "${gpt_epoch[@]}" --amp --model llama-tiny
compared "day 4: GPT, amp f16 with a loss scaler, one process" 0.05 \
  "$labs/day4_large_models_lab" "${gpt_epoch[@]}" --amp --amp-dtype f16
compared "day 4: optimizer in backward, one process" 0.05 "$labs/day4_large_models_lab" \
  "${gpt_epoch[@]}" --amp --optimizer-in-backward
compared "day 4: GPT step as a CUDA graph, amp bf16" 0.05 "$labs/day4_large_models_lab" \
  "${gpt_epoch[@]}" --amp --cuda-graphs
wait_free "day 4: no host wait, GPT amp bf16" "$labs/day4_large_models_lab" --test \
  --test-nsteps 12 --log-every 6 --no-progress --device "$accelerator" --batch-size 8 \
  --sample-tokens 0 --context 64 --amp "${text[@]}"
# CoAtNet on the embedded images (a bundle's first 1,024): grouped convolutions, relative
# attention, channels-last.
coatnet_model=(--no-progress --batch-size 16 --model coatnet-micro --channels-last --amp)
[[ -d $root/fashion-mnist ]] && coatnet_model+=(--data-dir "$root/fashion-mnist")  # a bundle's own
compared "day 4: CoAtNet, amp bf16, channels-last" 0.05 "$labs/day4_large_models_lab" \
  "${coatnet_model[@]}" --steps-per-epoch 6 --epochs 1

skip_one_gpu() {  # skip_one_gpu NAME: a case that needs a GPU per rank, on a node of one
  selected "$1" || return 0
  results+=("$(printf '%-44s %-10s %-5s %8s' "$1" "$device" "SKIP" "1 GPU")")
  skipped=$((skipped + 1))
}
multi() {  # multi NAME RANKS BINARY ARGS...: on RANKS GPUs (CPU ranks with --cpu)
  local name=$1 np=$2
  shift 2
  if ((np >= 2)); then
    record "$name" "$device x$np" "${mpirun_cmd[@]}" -np "$np" "$@"
  elif [[ $name == NCCL* ]]; then  # NCCL needs a GPU per rank
    skip_one_gpu "$name"
  else
    # One GPU: two ranks share it, the MPI engine staging its tensors through host memory
    # (communicator.h), so the parallel schemes' GPU code runs here too.
    record "$name" "$device x2, shared" "${mpirun_cmd[@]}" -np 2 "$@"
  fi
}
# multi_compared NAME RANKS GROUP TOLERANCE BINARY ARGS... -- PARALLEL...: the lab with ARGS and
# PARALLEL on RANKS GPUs (two sharing one on a node of one GPU) in data-parallel replicas of GROUP
# ranks each, against one process with ARGS alone on the same device accumulating what the
# replicas compute side by side (RANKS / GROUP times its micro-batches: ARGS' --accumulate, else
# PARALLEL's --micro-batches, else 1); with GROUP "cpu", against the same ranks on the CPU (ARGS
# without --device). Both runs' last losses within the relative TOLERANCE: on the CPU the
# model-parallel runs sum as one process does and end equal; the GPU's kernels and bf16 move them
# by well under a percent.
multi_compared() {
  local name=$1 np=$2 group=$3 tolerance=$4 binary=$5
  shift 5
  local args=() parallel=() reference=() micro=1 shown i
  while (($#)) && [[ $1 != -- ]]; do args+=("$1"); shift; done
  (($#)) && shift
  parallel=("$@")
  ((np >= 2)) || np=2
  shown=$([[ $np == "$ranks" ]] && echo "$device x$np" || echo "$device x2, shared")
  if [[ $group == cpu ]]; then
    reference=("${mpirun_cmd[@]}" -np "$np" "$binary" "${args[@]}" "${parallel[@]}" --device cpu)
    args+=(--device "$device")
  else
    for ((i = 0; i + 1 < ${#parallel[@]}; ++i)); do
      [[ ${parallel[i]} == --micro-batches ]] && micro=${parallel[i + 1]}
    done
    reference=("$binary" "${args[@]}" --accumulate $((micro * np / group)))
    for ((i = 0; i + 1 < ${#args[@]}; ++i)); do  # ARGS' own --accumulate: replaced
      if [[ ${args[i]} == --accumulate ]]; then
        reference=("$binary" "${args[@]}")
        reference[i + 2]=$((args[i + 1] * np / group))
      fi
    done
  fi
  record "$name" "$shown" bash -c 'ranks_against_reference "$@"' _ "$tolerance" \
    $((${#mpirun_cmd[@]} + 3 + ${#args[@]} + ${#parallel[@]})) "${mpirun_cmd[@]}" -np "$np" \
    "$binary" "${args[@]}" "${parallel[@]}" "${reference[@]}"
}
# ranks_against_reference TOLERANCE N RANKED(N words) REFERENCE...: multi_compared's two runs, in
# the case's own shell (which record times and stops).
ranks_against_reference() {
  local tolerance=$1 n=$2 ranked reference
  shift 2
  ranked=$("${@:1:n}" 2>&1) || { echo "$ranked"; return 1; }
  echo "$ranked"
  shift "$n"
  reference=$("$@" 2>&1) || { echo "the reference, $*:"; echo "$reference"; return 1; }
  losses_within "$tolerance" "on the ranks" "$ranked" "the reference" "$reference"
}
export -f ranks_against_reference
# gpt-tiny's 4 blocks and 4 heads cut in two: pipeline and tensor-parallel cases on an even
# number of GPUs, the rest of them data-parallel replicas.
even=$((ranks / 2 * 2))
multi "NCCL: collectives, exchange, split, timeout" "$ranks" \
  "$root/common/parallel/tests/nccl_test_ranks" --gtest_brief=1
multi_compared "day 2: DDP over NCCL" "$ranks" cpu 0.02 "$labs/day2_ddp_lab" --synthetic 512 \
  -b 32 --epochs 1 --no-progress
day4=$labs/day4_large_models_lab
gpt_ranks=("${gpt_epoch[@]}" --device "$device")
multi_compared "day 4: DDP" "$ranks" 1 0.02 "$day4" "${gpt_ranks[@]}"
multi_compared "day 4: ZeRO-3, bf16 parameters" "$ranks" 1 0.05 "$day4" "${gpt_ranks[@]}" --amp \
  -- --sharding zero3 --param-dtype bf16
multi_compared "day 4: DDP, optimizer in backward" "$ranks" 1 0.02 "$day4" "${gpt_ranks[@]}" \
  --optimizer-in-backward
# The ZeRO-3 step as one graph, its gathers and reduce-scatters inside (NCCL's kernels in the CUDA
# graph; MPI's as tasks of the CPU graph with --cpu). Ranks that share a GPU exchange through MPI
# from the host, which a CUDA graph cannot replay: a GPU per rank, or skipped.
if ((ranks >= 2)) || [[ $device != cuda ]]; then
  multi_compared "day 4: ZeRO-3 step as one graph" "$ranks" 1 0.05 "$day4" "${gpt_ranks[@]}" \
    --amp -- --sharding zero3 --cuda-graphs
else
  skip_one_gpu "day 4: ZeRO-3 step as one graph"
fi
# The compressed all-reduce's all-to-all and all-gather of sign bits over NCCL, against the same
# ranks compressing on the CPU (one process compresses nothing, as DeepSpeed's: no reference).
multi_compared "day 4: 1-bit Adam, compressed after 2 steps" "$ranks" cpu 0.05 "$day4" \
  "${gpt_epoch[@]}" --optimizer onebit-adam --freeze-step 2
multi_compared "day 4: 1-bit LAMB, compressed after 2 steps" "$ranks" cpu 0.05 "$day4" \
  "${gpt_epoch[@]}" --optimizer onebit-lamb --freeze-step 2
multi_compared "day 4: ZeRO-3, f16 parameters and loss scaler" "$ranks" 1 0.05 "$day4" \
  "${gpt_ranks[@]}" --amp --amp-dtype f16 -- --sharding zero3 --param-dtype f16
# The course's V100s train day 4 in f16 with the loss scaler (what --amp takes before sm_80):
# tensor parallelism and the 1F1B pipeline against one process, and the overflow drill, whose
# inf in the last rank's gradients alone every rank must skip (rank 0 reports it).
multi_compared "day 4: V100 f16, tensor parallelism" "$even" 2 0.05 "$day4" \
  "${gpt_ranks[@]}" --accumulate 2 --amp --amp-dtype f16 -- --tensor-parallel 2
multi_compared "day 4: V100 f16, 1f1b pipeline" "$even" 2 0.05 "$day4" \
  "${gpt_ranks[@]}" --amp --amp-dtype f16 -- --pipeline-stages 2 --micro-batches 4
drill_ranks=$((even >= 2 ? even : 2))
# shellcheck disable=SC2016  # the inner shell expands them
record "day 4: V100 f16, one rank's overflow" "$device x$drill_ranks" bash -c \
  'out=$("$@" 2>&1); s=$?; echo "$out"; ((s == 0)) &&
   grep -q "^loss scale 32768, 1 step(s) skipped" <<<"$out"' _ "${mpirun_cmd[@]}" \
  -np "$drill_ranks" "$day4" "${gpt_ranks[@]}" --amp --amp-dtype f16 --overflow-drill 3 \
  --tensor-parallel 2
for schedule in gpipe 1f1b zb-h1; do
  multi_compared "day 4: $schedule pipeline, 2 stages" "$even" 2 0.02 "$day4" "${gpt_ranks[@]}" \
    -- --pipeline-stages 2 --micro-batches 4 --schedule "$schedule"
done
multi_compared "day 4: interleaved pipeline, 2 x 2 stages" "$even" 2 0.02 "$day4" \
  "${gpt_ranks[@]}" -- --pipeline-stages 2 --virtual-stages 2 --micro-batches 4 \
  --schedule interleaved
multi_compared "day 4: tensor parallelism, 2 ranks" "$even" 2 0.02 "$day4" "${gpt_ranks[@]}" \
  --accumulate 2 -- --tensor-parallel 2
# Ring attention: keys and values around the ranks over NCCL, the blocks on the GPU.
multi_compared "day 4: context parallelism, 2 ranks" "$even" 2 0.02 "$day4" "${gpt_ranks[@]}" \
  --accumulate 2 -- --context-parallel 2
# Stages whose activations change shape, channels-last on the wire.
multi_compared "day 4: CoAtNet in 2 pipeline stages" "$even" 2 0.05 "$day4" \
  "${coatnet_model[@]}" --device "$device" --steps-per-epoch 6 --epochs 1 -- \
  --pipeline-stages 2 --micro-batches 4 --pipeline-balance compute

# The course's reference workloads at full size, on a GPU only (a CPU takes minutes a step), the
# slowest cases, last: their figures go to the performance table at the end.
if [[ $device == cuda ]]; then
  record "day 1: ResNet-50 b128 224 px bf16 channels-last" cuda "$lab1" --synthetic 1536 \
    --model resnet50 --image-size 224 --batch-size 128 --amp --channels-last --test \
    --test-nsteps 10 --no-progress --device cuda
  record "day 4: gpt-mini b32, 256 tokens, bf16" cuda "$labs/day4_large_models_lab" \
    --model gpt-mini --batch-size 32 --amp --test --test-nsteps 20 --epochs 50 --no-progress \
    --sample-tokens 0 --device cuda "${text[@]}"
  record "day 4: GPT-2 124M b8, 1024 tokens, bf16" cuda "$labs/day4_large_models_lab" \
    --model gpt2 --synthetic-tokens $((8 * 1024 * 24)) --batch-size 8 --amp --test \
    --test-nsteps 20 --no-progress --device cuda
  images=()
  [[ -d $root/fashion-mnist ]] && images=(--data-dir "$root/fashion-mnist")
  record "day 4: ViT-B/16 224 px bf16" cuda "$labs/day4_large_models_lab" --model vit-b16 \
    --image-size 224 --batch-size 64 --amp --test --test-nsteps 12 --epochs 20 --no-progress \
    --device cuda "${images[@]}"
fi

echo
echo "GPU self-test on $(hostname) ($where)"
printf '%-44s %-10s %-5s %8s\n' case device result seconds
printf '%s\n' "${results[@]}"
figure() {  # figure CASE PATTERN FIELD: a number from a case's log, or "-"
  local file
  file=$(case_log "$1")
  awk -v pattern="$2" -v field="$3" '$0 ~ pattern { value = $field } END { print value == "" ? "-" : value }' \
    "$file" 2>/dev/null || echo -
}
# The performance table: each timed case's rate, its MFU where the lab reports one, its host
# waits in steps 2..N, and what bench/RESULTS.md measured or aims at, beside it.
echo
printf '%-48s %22s %7s %18s  %s\n' case "rate (compute)" MFU "host waits" "bench/RESULTS.md"
perf_row() {  # perf_row CASE EXPECTED
  local file steps
  file=$(case_log "$1")
  [[ -f $file ]] || return 0
  steps=$(figure "$1" "^host waits for" 7)
  printf '%-48s %22s %7s %18s  %s\n' "$1" \
    "$(figure "$1" "^training performance" 3) $(figure "$1" "^training performance" 4)" \
    "$(figure "$1" "MFU [0-9]" 8)" "$(figure "$1" "^host waits for" 8) in steps ${steps%:}" "$2"
}
perf_row "day 1: ResNet-50 b128 224 px bf16 channels-last" \
  "2,779 images/s on an H200 (PyTorch 4,284); aim: PyTorch's"
perf_row "day 4: gpt-mini b32, 256 tokens, bf16" "818,208 tokens/s on an H200 (f32: 359,834)"
perf_row "day 4: GPT-2 124M b8, 1024 tokens, bf16" \
  "aim: PyTorch's tokens/s (gpu_compare.sh), MFU >= 40%"
perf_row "day 4: ViT-B/16 224 px bf16" "aim: PyTorch's images/s"
perf_row "day 3: ResNet-50 step, decoded on the device" "aim: the step's own rate (day 1's row)"
perf_row "day 1: no host wait, f16 graph channels-last" "0 host waits"
perf_row "day 4: no host wait, GPT amp bf16" "0 host waits"
gpt2_case="day 4: GPT-2 124M b8, 1024 tokens, bf16"
if [[ -f $(case_log "$gpt2_case") ]]; then
  echo "GPT-2 124M b8 x 1024 tokens: max memory allocated" \
    "$(figure "$gpt2_case" "^max memory allocated" 4)" \
    "$(figure "$gpt2_case" "^max memory allocated" 5) (attention's scores, not materialised," \
    "would be 201 MB a layer in bf16)"
fi
echo
echo "day 3's loader at 224 px, images/s: $(figure "day 3: loader, CPU workers" "^loader:" 2)" \
  "with $(nproc) CPU workers, $(figure "day 3: loader, decoded on the device" "^loader:" 2)" \
  "decoded on $accelerator; the ResNet-50 step fed by it" \
  "$(figure "day 3: ResNet-50 step, decoded on the device" "^training performance" 3)"
echo "selftest: $((${#results[@]} - failed - skipped - cut)) passed, $skipped skipped (one GPU)," \
  "$failed failed, $cut cut by the deadline$( ((left_out == 0)) || echo ", $left_out left out by --cases")"
((failed == 0)) || exit 1
((cut == 0)) || exit 124  # as timeout(1) says it: on_device.sh reports the part as CUT
