#!/usr/bin/env bash
# The lab sheets' commands, parsed by the programs they name: every fenced command of the sheets
# that runs a program of this repository (bazel run //pkg:name, bazel-bin/pkg/name under mpirun
# or not, $hpo, slurm/race.sh enter, the sbatch scripts and slurm/submit.sh with a lab's flags)
# must name a program this test was built with, and a command-line program must accept the
# command's arguments: they are given to it with --help appended (which checks every value and
# exits before any work), and each flag must be one its help lists (--help alone does not reject
# an unknown flag). A sheet whose command no longer parses fails here, with the sheet and the
# command.
# Usage: sheet_commands_test.sh SHEET... --cli PROGRAM... --other PROGRAM...
#   PROGRAM: a runfiles path such as day1_gpu/lab; --cli ones parse flags with CLI11, --other
#   ones (benchmarks, scripts) are only checked to exist.
set -uo pipefail

sheets=() cli=() other=() group=sheets
for arg in "$@"; do
  case $arg in
    --cli) group=cli ;;
    --other) group=other ;;
    *)
      case $group in
        sheets) sheets+=("$arg") ;;
        cli) cli+=("$arg") ;;
        other) other+=("$arg") ;;
      esac
      ;;
  esac
done

failures=0 checked=0
fail() {
  echo "FAILED: $1"
  failures=$((failures + 1))
}

# A plain loop: `printf | grep -q` under pipefail fails when grep exits on its match before
# printf has written the rest (SIGPIPE).
is_in() {
  local item=$1 candidate
  shift
  for candidate in "$@"; do [[ $candidate == "$item" ]] && return 0; done
  return 1
}

# The fenced shell lines of a sheet, continuation lines joined, comments and prompts removed,
# chained commands (' && ', '; ', ' | ') one per line.
commands_of() {
  awk '/^```/ { fenced = !fenced; next }
       fenced { print }' "$1" |
    sed -e ':join' -e '/\\$/{N;s/\\\n[[:space:]]*/ /;b join' -e '}' |
    sed -e 's/[[:space:]]#.*$//' -e 's/^\$ //' -e 's/[[:space:]]*$//' |
    sed -e 's/[[:space:]]&&[[:space:]]/\n/g' -e 's/;[[:space:]]/\n/g' -e 's/[[:space:]]|[[:space:]]/\n/g'
}

# A label or output path as the runfiles path of its program: //pkg:name, //pkg (its last
# part), bazel-bin/pkg/name.
program_path() {
  local p=$1
  case $p in
    //*:*) p=${p#//}; echo "${p%%:*}/${p#*:}" ;;
    //*) p=${p#//}; echo "$p/${p##*/}" ;;
    bazel-bin/*) echo "${p#bazel-bin/}" ;;
  esac
}

# Checks PROGRAM ARGS... as the sheet's command `line`.
check_program() {
  local sheet=$1 line=$2 program=$3
  shift 3
  checked=$((checked + 1))
  if is_in "$program" "${other[@]}"; then
    [[ -x $program ]] || fail "$sheet: '$line': $program was not built"
    return
  fi
  if ! is_in "$program" "${cli[@]}"; then
    fail "$sheet: '$line': $program is none of the programs this test knows (tools/labsheet/BUILD)"
    return
  fi
  local help
  if ! help=$("$program" "$@" --help 2>&1); then
    fail "$sheet: '$line': $program does not accept these arguments:"
    echo "$help" | tail -3
    return
  fi
  local arg flag
  for arg in "$@"; do
    flag=${arg%%=*}
    [[ $flag =~ ^--?[A-Za-z] ]] || continue
    grep -qE -- "(^|[ ,])$flag([ ,=]|$)" <<<"$help" ||
      fail "$sheet: '$line': $program has no flag $flag"
  done
}

# The program and arguments of one command, if it runs one of this repository's programs.
check_command() {
  local sheet=$1 line=$2
  local -a words
  # Quote-aware word splitting, no expansion.
  mapfile -t words < <(xargs -n1 printf '%s\n' <<<"$line" 2>/dev/null)
  ((${#words[@]} > 0)) || return
  # Environment assignments before the command.
  while ((${#words[@]} > 0)) && [[ ${words[0]} =~ ^[A-Z_]+= ]]; do words=("${words[@]:1}"); done
  ((${#words[@]} > 0)) || return
  case ${words[0]} in
    bazel)
      [[ ${words[1]:-} == run ]] || return
      local target=${words[2]} rest=("${words[@]:3}")
      [[ ${rest[0]:-} == -- ]] && rest=("${rest[@]:1}")
      check_program "$sheet" "$line" "$(program_path "$target")" "${rest[@]}"
      ;;
    mpirun | srun)
      local k=1
      while ((k < ${#words[@]})) && [[ ${words[k]} != bazel-bin/* ]]; do k=$((k + 1)); done
      ((k < ${#words[@]})) || return
      check_program "$sheet" "$line" "$(program_path "${words[k]}")" "${words[@]:k+1}"
      ;;
    bazel-bin/*)
      check_program "$sheet" "$line" "$(program_path "${words[0]}")" "${words[@]:1}"
      ;;
    \$hpo)
      check_program "$sheet" "$line" day3_data/hpo "${words[@]:1}"
      ;;
    slurm/race.sh)
      [[ ${words[1]:-} == enter && ${words[3]:-} == -- ]] || return
      check_program "$sheet" "$line" day3_data/race "${words[@]:4}"
      ;;
    sbatch)
      local k=1
      while ((k < ${#words[@]})) && [[ ${words[k]} != slurm/*.sbatch ]]; do k=$((k + 1)); done
      ((k < ${#words[@]})) || return
      case ${words[k]} in
        slurm/day1_gpu.sbatch) check_program "$sheet" "$line" day1_gpu/lab "${words[@]:k+1}" ;;
        slurm/day2_ddp.sbatch) check_program "$sheet" "$line" day2_ddp/lab "${words[@]:k+1}" ;;
        slurm/hpo.sbatch) check_program "$sheet" "$line" day3_data/hpo worker "${words[@]:k+1}" ;;
      esac
      ;;
    slurm/submit.sh)
      local k=1
      while ((k < ${#words[@]})) && [[ ${words[k]} != -- ]]; do k=$((k + 1)); done
      ((k < ${#words[@]})) || return
      check_program "$sheet" "$line" "${words[k - 1]}/lab" "${words[@]:k+1}"
      ;;
  esac
}

for sheet in "${sheets[@]}"; do
  while IFS= read -r line; do
    check_command "$sheet" "$line"
  done < <(commands_of "$sheet")
done

if ((failures > 0)); then
  echo "$failures of $checked sheet commands do not parse"
  exit 1
fi
((checked > 50)) || {
  echo "FAILED: only $checked commands found in ${#sheets[@]} sheets: is the extraction broken?"
  exit 1
}
echo "ok: $checked commands of ${#sheets[@]} lab sheets parse"
