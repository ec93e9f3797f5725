#!/usr/bin/env bash
# The day-1 lab builds only the libraries tools/cc/day1_lab_libraries.txt lists: a new trainee's
# first `bazel run //day1_gpu:lab` compiles every one of them, so a library that joins its
# dependencies (a day-4 kernel pulled in through a header's target) fails here, named with the
# path that pulls it in, and one that left must leave the list too. Run from ./test.sh (it needs
# bazel query, so it is no bazel test).
set -euo pipefail
cd "$(dirname "$0")/../.."

listed=tools/cc/day1_lab_libraries.txt
actual=$(bazel query --noshow_progress 'kind("cc_library", deps(//day1_gpu:lab))' 2>/dev/null |
  grep -v '_interface$' | sort)
allowed=$(grep -v '^#' "$listed" | grep . | sort)
joined=$(comm -23 <(echo "$actual") <(echo "$allowed"))
left=$(comm -13 <(echo "$actual") <(echo "$allowed"))
for library in $joined; do
  path=$(bazel query --noshow_progress "somepath(//day1_gpu:lab, $library)" 2>/dev/null | paste -sd' ')
  echo "FAIL: //day1_gpu:lab now builds $library ($path): take it out, or list it in $listed with its reason"
done
for library in $left; do
  echo "FAIL: $listed lists $library, which //day1_gpu:lab no longer builds: take it off the list"
done
[[ -z $joined && -z $left ]] || exit 1
echo "ok: //day1_gpu:lab builds the $(wc -l <<<"$actual") libraries $listed lists"
