#!/usr/bin/env bash
# The GPU proof as a short GPU allocation meets it, dry-run here: the bundle made by
# make_bundle.sh, unpacked in an empty folder beside a copy of the repository's tracked files and
# nothing else (no build tree, no Bazel), and tools/gpu_selftest/on_device.sh run there with a
# time budget, on the simulated accelerator, in a mount namespace where Debian's Fashion-MNIST
# and fortunes are absent and the CUDA libraries are reachable only through a Python's
# site-packages (nvidia/cu13/lib, as PyTorch's wheels install them). Then its output folder
# against what comes back from such a node (at most 8 files, at most 2 folders deep, names of
# letters, digits, '.', '_' and '-'), the summary's lines, the case logs in their archive, and
# the bundle with the tree under 60 MiB; last, on_device.sh without --dry-run on this node
# without a GPU fails in its preflight with one message. ./test.sh runs this (it needs Bazel, so
# it is not a bazel test itself).
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "bundle_test: $*" >&2; exit 1; }
# The multi-rank cases' ranks share this machine: PMIx authenticates them by the local socket's
# credentials, not by munge's, whose daemon is not running here (.bazelrc says why it matters).
export PMIX_MCA_psec=native
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The build's own GPU architectures: a bundle for a cluster adds sm_90's (make_bundle.sh), which
# only lengthens nvcc's part of the build; the cases run here are the same.
tools/gpu_selftest/make_bundle.sh --with-mpi "$work/bundle.tar.xz" build
mkdir "$work/node" "$work/tree"
tar -C "$work/node" -xJf "$work/bundle.tar.xz"
git ls-files -z | tar --null -T - -cf - | tar -C "$work/tree" -xf -
if grep -rqs "$PWD" "$work/node/gpu_selftest/run_selftest.sh"; then
  fail "the bundle refers to the build tree"
fi

# What is sent to a node: the bundle and the tracked tree, at most 60 MiB together.
bundle_bytes=$(stat -c %s "$work/bundle.tar.xz")
tree_bytes=$(du -sb "$work/tree" | cut -f1)
sent_mib=$(((bundle_bytes + tree_bytes + 1048575) / 1048576))
echo "sent to a node: bundle $((bundle_bytes / 1048576)) MiB + tree $((tree_bytes / 1024)) KiB"
((bundle_bytes + tree_bytes < 60 * 1048576)) || fail "bundle and tree are $sent_mib MiB, over 60"

# A Python whose site-packages holds the CUDA libraries, as a GPU node's PyTorch install does.
python3 -m venv --without-pip "$work/venv"
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cuda_lib=$(dirname "$(readlink -f "$(ldconfig -p | awk '/libcudnn\.so\.9 / && !n++ {print $NF}')")")
[[ -d $cuda_lib ]] || fail "no cuDNN on this machine to stand in for a node's wheels"
mkdir -p "$site/nvidia/cu13/lib"

# The node: the system's CUDA, the course's cached libraries and the Debian data masked.
# shellcheck disable=SC2016  # the namespace's shell expands them
node='set -e
mount --bind "$1" "$2/nvidia/cu13/lib"
for dir in "$(readlink -f /usr/local/cuda)" /usr/share/datasets /usr/share/games/fortunes \
  "$HOME/.cache/course"; do
  [[ -d $dir ]] && mount -t tmpfs none "$dir"
done
[[ ! -e /usr/share/datasets/fashion-mnist && ! -e $1/libcudnn.so.9 ]]  # masked
[[ -e $2/nvidia/cu13/lib/libcudnn.so.9 ]]  # reachable there alone
cd "$3/tree"
set +e
tools/gpu_selftest/on_device.sh "$3/node/gpu_selftest" "$3/out" --python "$4" "${@:5}"'
namespace=(unshare --mount --propagation private)
[[ $(id -u) -eq 0 ]] || namespace+=(--map-root-user)
"${namespace[@]}" true 2>/dev/null || fail "no mount namespace here (unshare --mount)"
start=$SECONDS
status=0
"${namespace[@]}" bash -c "$node" _ "$cuda_lib" "$site" "$work" "$work/venv/bin/python" \
  --dry-run --budget 600 >"$work/dry_run.txt" 2>&1 || status=$?
echo "dry run: exit $status after $((SECONDS - start)) s"
cat "$work/dry_run.txt"
((status == 0)) || { cat "$work/out/"*.txt; fail "on_device.sh --dry-run failed"; }

# What comes back from a node: at most 8 files of at most 16 MiB (64 MiB together), 2 folders
# deep, plain names.
files=$(cd "$work/out" && find . -type f | sed 's|^\./||')
(($(wc -l <<<"$files") <= 8)) || fail "more than 8 output files: $files"
total_bytes=$(du -cb "$work/out" | tail -n 1 | cut -f1)
((total_bytes <= 64 * 1048576)) || fail "the output files are $total_bytes bytes, over 64 MiB"
while read -r file; do
  (($(stat -c %s "$work/out/$file") <= 16 * 1048576)) || fail "$file is over 16 MiB"
  (($(tr -cd / <<<"$file" | wc -c) <= 2)) || fail "$file is more than 2 folders deep"
  [[ $(basename "$file") =~ ^[A-Za-z0-9._-]+$ ]] || fail "$file has a name a node cannot return"
done <<<"$files"
(cd "$work/out" && ls -l)
summary=$work/out/summary.txt
for part in preflight speed host_waits selftest; do
  grep -qE "^$part +PASS " "$summary" || fail "the summary has no passed $part line"
done
grep -qE "^preflight .*every library resolves" "$summary" || fail "preflight's line: $(cat "$summary")"
grep -q "$site/nvidia/cu13/lib" "$work/out/preflight.txt" || fail "the site-packages folder was not searched"
grep -qE "libcudnn\.so\.9 => $site/nvidia/cu13/lib/" "$work/out/preflight.txt" ||
  fail "cuDNN did not resolve through site-packages: $(grep cudnn "$work/out/preflight.txt")"
# Every speed row made, the lab's side measured (PyTorch is absent from this Python).
rows=$(grep -cE '^\| [a-z].* \| - \| [0-9.]+ \| - \|$' "$work/out/speed.txt" || true)
((rows == 9)) || fail "the speed table has $rows measured rows of 9: $(cat "$work/out/speed.txt")"
grep -qE "host waits for sim:0 .* steps 2\.\.[0-9]+: 0 at most" "$work/out/host_waits.txt" ||
  fail "host_waits: $(cat "$work/out/host_waits.txt")"
[[ $(tail -n 1 "$work/dry_run.txt") == total:* ]] || fail "the summary is not printed last"

# The case logs, one archive: the one-process day-4 case trained, CoAtNet on the bundle's images.
mkdir "$work/cases"
tar -C "$work/cases" -xzf "$work/out/selftest_cases.tar.gz"
logs=$work/cases/selftest_cases
cases=$(find "$logs" -name '*.log' | wc -l)
((cases >= 24)) || fail "$cases case logs kept, expected 24"
grep -q "^training gpt-tiny" "$logs/day_4__GPT__amp_bf16__one_process_.log" ||
  fail "day 4's one-process log shows no training"
grep -q "1024 images of 28 px" "$logs/day_4__CoAtNet__amp_bf16__channels_last_.log" ||
  fail "day 4's CoAtNet case did not train on the bundle's 1,024 images"
grep -qE "^selftest: [0-9]+ passed, 0 skipped \(one GPU\), 0 failed, 0 cut" "$work/out/selftest.txt" ||
  fail "selftest: $(tail -n 3 "$work/out/selftest.txt")"

# A deadline already reached: the case is listed as CUT, not run, and the self-test says so in
# its exit status (124, as timeout's); on_device.sh refuses a bad budget and a used folder.
status=0
(cd "$work/node" && gpu_selftest/run_selftest.sh --cpu --cases 'day 1: f32' \
  --deadline "$(date +%s)") >"$work/cut.txt" 2>&1 || status=$?
((status == 124)) && grep -qE "^selftest: 0 passed, .*0 failed, 1 cut by the deadline" "$work/cut.txt" &&
  grep -qE "^day 1: f32 +sim/cpu +CUT " "$work/cut.txt" || fail "a reached deadline: exit $status, $(tail -n 3 "$work/cut.txt")"
for bad in "--budget ten|--budget must be a whole number" "|is not empty"; do
  status=0
  message=$(tools/gpu_selftest/on_device.sh "$work/node/gpu_selftest" "$work/out" ${bad%%|*} 2>&1) ||
    status=$?
  ((status == 2)) && [[ $message == *"${bad#*|}"* ]] || fail "on_device.sh ${bad%%|*}: exit $status, $message"
done

# Without --dry-run, on this node without a GPU: the preflight says why in one line, and the
# command fails inside a small budget.
if tools/gpu_selftest/on_device.sh "$work/node/gpu_selftest" "$work/no_gpu" --python /bin/false \
  --budget 60 >"$work/no_gpu.txt" 2>&1; then
  fail "on_device.sh passed on a node without a GPU"
fi
grep -qE "^preflight +FAIL:1 .*preflight: no GPU is usable: (no NVIDIA driver|the NVIDIA driver)" "$work/no_gpu/summary.txt" ||
  fail "on_device.sh without a GPU: $(cat "$work/no_gpu.txt")"
echo "ok: the dry run's six files, every part passed; without a GPU: $(grep '^preflight' "$work/no_gpu/summary.txt")"
