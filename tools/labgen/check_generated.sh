#!/usr/bin/env bash
# Fails when a checked-in trainee file differs from what labgen generates from its solution:
#   check_generated.sh <generated> <checked-in> [<generated> <checked-in> ...]
set -euo pipefail
status=0
while (($#)); do
  if ! diff -u "$2" "$1"; then
    echo "$2 is out of date: regenerate it with tools/labgen/update.sh" >&2
    status=1
  fi
  shift 2
done
exit "$status"
