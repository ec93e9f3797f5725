#!/usr/bin/env bash
# The documents name only what exists: every repository path a Markdown file of the course names
# in backticks (common/..., slurm/..., tools/...) is a file or folder of the checkout, and every
# Bazel label or pattern it names anywhere (`bazel run //day1_gpu:lab`, //common/...) is a target
# `bazel query` finds. A path the user makes (slurm/site.sh, slurm/jobs/) is listed below.
# Run from ./test.sh (it needs bazel, so it is no bazel test); prints each miss with its document.
set -uo pipefail
cd "$(dirname "$0")/../.."

made_by_the_user=(slurm/site.sh slurm/jobs/)
top='common|day1_gpu|day2_ddp|day3_data|day4_large_models|solutions|slurm|bench|tools|third_party|container'
misses=0
documents=$(git ls-files '*.md')

while read -r document path; do
  [[ -e $path ]] && continue
  printf '%s\n' "${made_by_the_user[@]}" | grep -qxF "$path" && continue
  echo "$document: names $path, which is not in the checkout"
  misses=$((misses + 1))
done < <(for d in $documents; do
  grep -oE '`[^` ]+`' "$d" | tr -d '`' | grep -E "^($top)/[A-Za-z0-9_./-]*$" |
    sed -e 's/[.,:;)]*$//' -e "s|^|$d |"
done | sort -u)

# Labels: //pkg:name, //pkg/... patterns, and //pkg (a package, as in "`//day1_gpu`'s tests", or
# its target of the same name: any target of it will do); `<day>` placeholders skipped.
mapfile -t labels < <(for d in $documents; do
  sed 's|//[a-z0-9_/]*<[^>]*>[^ `]*||g' "$d" |
    grep -oE '(^|[ `("=])//[a-z0-9_/.]*[a-z0-9_.](:[A-Za-z0-9_.+-]+)?' | sed 's/^[ `("=]//'
done | sed -E -e '/\.\.\.$/! s/\.$//' -e '/:|\.\.\.$/! s/$/:all/' | sort -u)
if ((${#labels[@]})); then
  missing=$(bazel query --keep_going --noshow_progress "set(${labels[*]})" 2>&1 >/dev/null |
    grep -E "no such (target|package)|does not exist" | sed 's/^ERROR: //')
  if [[ -n $missing ]]; then
    while read -r line; do
      label=$(grep -oE "//[a-z0-9_/.]*(:[A-Za-z0-9_.+-]+)?" <<<"$line" | head -1)
      label=${label%:all}
      echo "$(grep -lF -- "$label" $documents | tr '\n' ' ')names $label, which bazel does not" \
        "know: $line"
      misses=$((misses + 1))
    done <<<"$missing"
  fi
fi
echo "doc references: ${#labels[@]} labels and every backticked path checked, $misses missing"
((misses == 0))
