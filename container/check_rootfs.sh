#!/usr/bin/env bash
# The container's recipe tried here without Apptainer or Podman (a manual check, not part of
# ./test.sh; as root, with the Debian mirror reachable): bootstraps the root file system, copies
# the committed course into /opt/course, and runs in a chroot what the image's build runs
# (./setup.sh, then the day-1 lab built and run with --test), timing each stage.
#   container/check_rootfs.sh [DIR]          (default /tmp/course-rootfs, removed first)
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-/tmp/course-rootfs}
[[ $(id -u) -eq 0 ]] || { echo "check_rootfs: needs root (debootstrap, chroot)" >&2; exit 1; }
mounted=()
cleanup() {
  local m
  for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done
}
trap cleanup EXIT
stage() {  # stage NAME COMMAND...: runs it, prints its time
  local start=$SECONDS
  echo "== $1"
  shift
  "$@"
  echo "== done in $((SECONDS - start)) s"
}
rm -rf "$root"
stage "debootstrap (Debian 12, minbase)" container/make_rootfs.sh "$root"
mkdir -p "$root/opt/course"
git archive HEAD | tar -x -C "$root/opt/course"
for m in proc sys dev; do
  mount --bind "/$m" "$root/$m"
  mounted+=("$root/$m")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
in_root() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin bash -c "cd /opt/course && $1"; }
stage "./setup.sh in the root file system" in_root "./setup.sh"
stage "bazel run //day1_gpu:lab -- --test" in_root "bazel run //day1_gpu:lab -- --test --no-progress"
