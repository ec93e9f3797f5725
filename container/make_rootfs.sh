#!/usr/bin/env bash
# A Debian 12 root file system for the course's container, built offline from the Debian mirror
# with debootstrap (no base image is pulled from a registry): the minimal system, apt's sources,
# and a tar of it for container/Containerfile. As root:
#   container/make_rootfs.sh DIR [--tar FILE] [--mirror URL]
set -euo pipefail
dir="" tar="" mirror=http://deb.debian.org/debian
while (($#)); do
  case $1 in
    --tar) tar=${2:?--tar needs a file}; shift 2 ;;
    --mirror) mirror=${2:?--mirror needs a URL}; shift 2 ;;
    -*) echo "make_rootfs: unknown option '$1'" >&2; exit 1 ;;
    *) [[ -z $dir ]] || { echo "make_rootfs: one folder only" >&2; exit 1; }; dir=$1; shift ;;
  esac
done
[[ -n $dir ]] || { echo "usage: make_rootfs.sh DIR [--tar FILE] [--mirror URL]" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "make_rootfs: debootstrap needs root" >&2; exit 1; }
if ! command -v debootstrap >/dev/null; then
  apt-get install -y -qq --no-install-recommends debootstrap
fi
[[ ! -e $dir/etc/debian_version ]] || { echo "make_rootfs: $dir already holds a system" >&2; exit 1; }
debootstrap --variant=minbase --include=ca-certificates,git bookworm "$dir" "$mirror"
echo "deb $mirror bookworm main" >"$dir/etc/apt/sources.list"
echo "deb $mirror bookworm-updates main" >>"$dir/etc/apt/sources.list"
if [[ -n $tar ]]; then
  tar -C "$dir" -cf "$tar" .
  echo "wrote $tar"
fi
echo "root file system in $dir"
