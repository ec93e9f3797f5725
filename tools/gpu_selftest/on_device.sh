#!/usr/bin/env bash
# A short GPU allocation's one command: from an unpacked bundle (make_bundle.sh) and the
# repository's tracked files alone, the GPU proof in parts ordered by their value, under one time
# budget that each part's own limit divides, so that it ends in time whatever hangs:
#   1. preflight   the GPU, its driver, the CUDA libraries found and their versions, `ldd` of the
#                  main binaries: one message naming what is missing (preflight.sh)
#   2. speed       the labs beside the node's PyTorch: ResNet-50, GPT-2 124M with its MFU, the
#                  small network with and without CUDA graphs (bench/compare/gpu_compare.sh)
#   3. host_waits  the labs' host waits in steps 2..N on the GPU (host_waits_on_gpu.sh)
#   4. selftest    every case against the CPU, each under its own limit, the slowest last
#                  (run_selftest.sh); its case logs as one archive
# The CUDA runtime, cuBLAS, cuDNN and NCCL are taken where the node has them: a Python's
# site-packages (nvidia/*/lib, as PyTorch's wheels install them), CUDA_HOME, the system.
#   tools/gpu_selftest/on_device.sh BUNDLE OUT [--python PYTHON] [--budget SECONDS] [--dry-run]
#     BUNDLE    an unpacked bundle's gpu_selftest folder (tar xJf bundle.tar.xz)
#     OUT       an empty or new folder; it receives six files: summary.txt (a line a part, written
#               as each ends), preflight.txt, speed.txt, host_waits.txt, selftest.txt and
#               selftest_cases.tar.gz (every case's log)
#     --python  the node's Python, with PyTorch for the speed table and NVIDIA's libraries in its
#               site-packages (default: python3)
#     --budget  the whole command's seconds (default 510: it ends inside 9 minutes)
#     --dry-run the same parts on the simulated accelerator, the speed rows shrunk: the command
#               as a node runs it, checked where no GPU is (tools/gpu_selftest/bundle_test.sh)
# Run from the repository's root. Prints each part's line as it ends and the summary last; exits
# non-zero when a part failed or was cut.
set -uo pipefail
cd "$(dirname "$0")/../.."
usage="usage: tools/gpu_selftest/on_device.sh BUNDLE OUT [--python PYTHON] [--budget SECONDS] [--dry-run]"
(($# >= 2)) || { echo "$usage" >&2; exit 2; }
bundle=$1 out=$2 python=python3 budget=510 dry_run=()
shift 2
while (($#)); do
  case $1 in
    --python) python=${2:?--python needs a value}; shift 2 ;;
    --budget) budget=${2:?--budget needs a value}; shift 2 ;;
    --dry-run) dry_run=(--dry-run); shift ;;
    *) echo "on_device: unknown option '$1' ($usage)" >&2; exit 2 ;;
  esac
done
[[ $budget =~ ^[0-9]+$ ]] && ((budget >= 60)) ||
  { echo "on_device: --budget must be a whole number of seconds, 60 or more" >&2; exit 2; }
[[ -x $bundle/run_selftest.sh ]] ||
  { echo "on_device: $bundle is no unpacked bundle (no run_selftest.sh in it)" >&2; exit 2; }
bundle=$(realpath "$bundle")
if [[ -e $out && -n $(ls -A "$out" 2>/dev/null) ]]; then
  echo "on_device: $out is not empty: give a new or empty folder for the outputs" >&2
  exit 2
fi
mkdir -p "$out" || exit 2
out=$(realpath "$out")
deadline=$((SECONDS + budget))
reserve=20  # kept for the archive and the summary at the end
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The node's library folders: NVIDIA's wheels in the Python's site-packages, CUDA_HOME's; the
# system's own are ld.so's. Found first, so every part's binaries load.
node_library_dirs() {
  local sites dir
  sites=$(timeout 20 "$python" -c 'import site, sys
print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
  for dir in $sites; do
    for lib in "$dir"/nvidia/*/lib; do [[ -d $lib ]] && echo "$lib"; done
  done
  if [[ -n ${CUDA_HOME:-} ]]; then
    for lib in "$CUDA_HOME/lib64" "$CUDA_HOME/lib"; do [[ -d $lib ]] && echo "$lib"; done
  fi
}
COURSE_NODE_LIBRARY_DIRS=$(node_library_dirs | paste -sd: -)
export COURSE_NODE_LIBRARY_DIRS
export LD_LIBRARY_PATH="$bundle/lib${COURSE_NODE_LIBRARY_DIRS:+:$COURSE_NODE_LIBRARY_DIRS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

summary=$out/summary.txt
{
  echo "GPU proof on $(hostname), $(date -u '+%Y-%m-%d %H:%M UTC'), budget $budget s${dry_run:+ (dry run: the simulated accelerator)}"
  printf '%-11s %-6s %5s %6s  %s\n' part result took limit "its last word"
} >"$summary"
failures=0

# part NAME LIMIT COMMAND...: runs the command into OUT/NAME.txt under the smaller of LIMIT and
# what the budget has left, and adds its line to the summary: PASS, FAIL (its exit status) or
# CUT (stopped by its limit, or not started for want of time), its time, and its verdict (its
# last line starting "NAME:", else its last line).
part() {
  local name=$1 limit=$2 start=$SECONDS status result word
  shift 2
  local left=$((deadline - SECONDS - reserve))
  ((left < limit)) && limit=$left
  if ((limit < 5)); then
    echo "(not run: the budget of $budget s is spent)" >"$out/$name.txt"
    status=124
  else
    PART_DEADLINE=$(($(date +%s) + limit - 5)) timeout --kill-after=5 "$limit" "$@" \
      >"$out/$name.txt" 2>&1
    status=$?
  fi
  case $status in
    0) result=PASS ;;
    124 | 137) result=CUT ;;
    *) result="FAIL:$status" ;;
  esac
  [[ $result == PASS ]] || failures=$((failures + 1))
  word=$(grep "^$name: " "$out/$name.txt" | tail -n 1)
  [[ -n $word ]] || word=$(grep -v '^[[:space:]]*$' "$out/$name.txt" | tail -n 1)
  printf '%-11s %-6s %4d s %4d s  %s\n' "$name" "$result" $((SECONDS - start)) "$limit" \
    "${word:0:160}" | tee -a "$summary"
}

labs=$bundle/tools/gpu_selftest
part preflight 30 tools/gpu_selftest/preflight.sh "$bundle" "${dry_run[@]}"
part speed 240 bench/compare/gpu_compare.sh --lab "$labs/day1_gpu_lab" \
  --lab4 "$labs/day4_large_models_lab" --python "$python" --row-limit 45 "${dry_run[@]}"
part host_waits 75 "$bundle/host_waits_on_gpu.sh" --root "$bundle" "${dry_run[@]}"
cpu=()
((${#dry_run[@]})) && cpu=(--cpu)
# The self-test's cases keep cuDNN's plans for each other (plan_store.h): a shape's graph is
# built by the first case that meets it and loaded by the rest (the speed rows build their own).
# shellcheck disable=SC2016  # the inner shell expands PART_DEADLINE, which part() sets
COURSE_PLAN_CACHE=$work/cudnn_plans part selftest 600 bash -c '"$@" --deadline "$PART_DEADLINE"' _ "$bundle/run_selftest.sh" \
  "${cpu[@]}" --case-limit 60 --logs "$work/selftest_cases"
if [[ -d $work/selftest_cases ]]; then
  tar -C "$work" -czf "$out/selftest_cases.tar.gz" selftest_cases
else
  echo "(no case logs)" >>"$summary"
fi
echo "cuDNN plans the self-test's cases kept for each other: $(find "$work/cudnn_plans" -name '*.plan' 2>/dev/null | wc -l)" >>"$summary"
echo "total: $SECONDS s; files: $(ls "$out" | paste -sd' ' -)" >>"$summary"
echo
cat "$summary"
((failures == 0))
