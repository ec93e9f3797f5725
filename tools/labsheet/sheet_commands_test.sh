#!/usr/bin/env bash
# The lab sheets' commands, run: every fenced command of the sheets that runs a program of this
# repository (bazel run //pkg:name, bazel-bin/pkg/name under mpirun or not, $hpo, slurm/race.sh
# enter, the sbatch scripts and slurm/submit.sh with a lab's flags) runs here from the test's
# runfiles, in the sheets' order, on the trainee tree, with the course's small step count in place
# of the sheet's values of the same flags (sheet_runs.txt's "quick" lines), and must:
#   - exit 0; or
#   - on the trainee tree, stop at an unwritten exercise with its message ("TODO TPd.n: ...
#     (exercise not written yet ...)"), and then the solutions' program of the same command must
#     exit 0; or
#   - with --device cuda on a machine without a GPU, be refused with one "error:" line naming
#     CUDA (no crash).
# A command sheet_runs.txt marks "not-run" (too long for CI, a Slurm cluster, a nested bazel, a
# placeholder) is parsed instead: its arguments are given to the program with --help appended
# (which checks every value and exits before any work), and each flag must be one its help lists.
# A failing command is printed with its sheet and the end of its output. Sharded by the sheets'
# sections (see "Bazel's shards" below).
# Usage: sheet_commands_test.sh SHEET... --runs sheet_runs.txt --cli PROGRAM... --other PROGRAM...
#   PROGRAM: a runfiles path such as day1_gpu/lab; --cli ones parse flags with CLI11 (only they are
#   parsed for a not-run command), --other ones (benchmarks, scripts) run alike.
set -uo pipefail

sheets=() cli=() other=() runs="" group=sheets
for arg in "$@"; do
  case $arg in
    --cli | --other | --runs) group=${arg#--} ;;
    *)
      case $group in
        sheets) sheets+=("$arg") ;;
        cli) cli+=("$arg") ;;
        other) other+=("$arg") ;;
        runs) runs=$arg ;;
      esac
      ;;
  esac
done
if [[ ! -f $runs ]]; then
  echo "usage: sheet_commands_test.sh SHEET... --runs FILE --cli ... --other ..."
  exit 2
fi

root=$PWD
scratch=${TEST_TMPDIR:-$(mktemp -d)}
work=$scratch/work
mkdir -p "$work" "$scratch/tmp"
# The repository's files where a command names them relative to its root (--config
# day4_large_models/ds_config.json); what a command writes stays in the scratch folder.
for entry in "$root"/*; do ln -s "$entry" "$work/${entry##*/}"; done
export BUILD_WORKING_DIRECTORY=$work RUNFILES_DIR=${TEST_SRCDIR:-$root/..}
gpu_visible=false
nvidia-smi -L >/dev/null 2>&1 && gpu_visible=true
mpirun_options=(--oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
[[ $(id -u) -eq 0 ]] && mpirun_options+=(--allow-run-as-root)

quick_programs=() quick_whens=() quick_arguments=()
not_run_patterns=() not_run_reasons=() not_run_used=()
while IFS= read -r entry; do
  case $entry in
    "quick "*)
      entry=${entry#quick }
      selector=${entry%% : *}
      quick_programs+=("${selector%% *}")
      [[ $selector == *" "* ]] && quick_whens+=("${selector#* }") || quick_whens+=("")
      quick_arguments+=("${entry#* : }")
      ;;
    "not-run "*)
      entry=${entry#not-run }
      not_run_patterns+=("${entry%% :: *}")
      not_run_reasons+=("${entry#* :: }")
      not_run_used+=(0)
      ;;
  esac
done <"$runs"

failures=0 ran=0 parsed=0 stubs=0 refused=0
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

# Quote-aware word splitting, no expansion, one word a line.
words_of() { xargs -n1 printf '%s\n' <<<"$1" 2>/dev/null; }

# The fenced shell lines of a sheet, continuation lines joined, comments, prompts and indents
# removed, chained commands (' && ', '; ', ' | ', ' & ') one per line, a loop's body ("do ...")
# as a command of its own; a line "@@section" where a second-level heading starts a section.
commands_of() {
  awk '/^```/ { fenced = !fenced; next }
       !fenced && /^## / { print "@@section"; next }
       fenced { print }' "$1" |
    sed -e ':join' -e '/\\$/{N;s/\\\n[[:space:]]*/ /;b join' -e '}' |
    sed -e 's/[[:space:]]#.*$//' -e 's/^[[:space:]]*//' -e 's/^\$ //' -e 's/[[:space:]]*$//' |
    sed -e 's/[[:space:]]&&[[:space:]]/\n/g' -e 's/;[[:space:]]/\n/g' \
      -e 's/[[:space:]]|[[:space:]]/\n/g' -e 's/[[:space:]]&[[:space:]]/\n/g' |
    sed -e 's/^do[[:space:]]//'
}

# The program a sheet's "hpo=bazel-bin/..." assignment names (day 3's trainee tool by default).
hpo_of() {
  local assigned
  assigned=$(grep -oE 'hpo=bazel-bin/[A-Za-z0-9_/]+' "$1" | tail -1)
  echo "${assigned:-hpo=bazel-bin/day3_data/hpo}" | sed 's|^hpo=bazel-bin/||'
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

# Sets ranks (0: no mpirun), program and args from a sheet's command; fails when it runs none of
# this repository's programs.
resolve() {
  local sheet=$1 line=$2 k
  local -a words
  mapfile -t words < <(words_of "$line")
  # Environment assignments before the command.
  while ((${#words[@]} > 0)) && [[ ${words[0]} =~ ^[A-Z_]+= ]]; do words=("${words[@]:1}"); done
  ((${#words[@]} > 0)) || return 1
  ranks=0 program="" args=()
  case ${words[0]} in
    bazel)
      [[ ${words[1]:-} == run ]] || return 1
      program=$(program_path "${words[2]}")
      args=("${words[@]:3}")
      [[ ${args[0]:-} == -- ]] && args=("${args[@]:1}")
      ;;
    mpirun | srun)
      for ((k = 1; k < ${#words[@]}; k++)); do
        [[ ${words[k]} == -np || ${words[k]} == -n ]] && ranks=${words[k + 1]}
        [[ ${words[k]} == bazel-bin/* ]] && break
      done
      ((k < ${#words[@]})) || return 1
      program=$(program_path "${words[k]}")
      args=("${words[@]:k+1}")
      ;;
    bazel-bin/*) program=$(program_path "${words[0]}") args=("${words[@]:1}") ;;
    \$hpo) program=$(hpo_of "$sheet") args=("${words[@]:1}") ;;
    slurm/race.sh)
      [[ ${words[1]:-} == enter && ${words[3]:-} == -- ]] || return 1
      program=day3_data/race args=("${words[@]:4}")
      ;;
    sbatch)
      for ((k = 1; k < ${#words[@]}; k++)); do [[ ${words[k]} == slurm/*.sbatch ]] && break; done
      ((k < ${#words[@]})) || return 1
      args=("${words[@]:k+1}")
      case ${words[k]} in
        slurm/day1_gpu.sbatch) program=day1_gpu/lab ;;
        slurm/day2_ddp.sbatch) program=day2_ddp/lab ;;
        slurm/hpo.sbatch) program=day3_data/hpo args=(worker "${args[@]}") ;;
        *) return 1 ;;
      esac
      ;;
    slurm/submit.sh)
      for ((k = 1; k < ${#words[@]}; k++)); do [[ ${words[k]} == -- ]] && break; done
      ((k < ${#words[@]})) || return 1
      program=${words[k - 1]}/lab args=("${words[@]:k+1}")
      ;;
    *) return 1 ;;
  esac
  is_in "$program" "${cli[@]}" "${other[@]}" && return 0
  fail "$sheet: '$line': $program is none of the programs this test knows (tools/labsheet/BUILD)"
  return 1
}

# Sets reason to why sheet_runs.txt does not run LINE, if it does not (no subshell: the entry
# is marked used).
not_run_reason() {
  local k
  for k in "${!not_run_patterns[@]}"; do
    # shellcheck disable=SC2053 # the entry is a pattern
    if [[ $1 == ${not_run_patterns[k]} ]]; then
      not_run_used[k]=1
      reason=${not_run_reasons[k]}
      return 0
    fi
  done
  return 1
}

# Checks that PROGRAM accepts ARGS... (--help appended) and that its help lists each flag.
parse_only() {
  local sheet=$1 line=$2 program=$3
  shift 3
  [[ -x $program ]] || { fail "$sheet: '$line': $program was not built"; return; }
  is_in "$program" "${cli[@]}" || return 0
  local help arg flag
  if ! help=$("$program" "$@" --help 2>&1); then
    fail "$sheet: '$line': $program does not accept these arguments:"
    echo "$help" | tail -3
    return
  fi
  for arg in "$@"; do
    flag=${arg%%=*}
    [[ $flag =~ ^--?[A-Za-z] ]] || continue
    grep -qE -- "(^|[ ,])$flag([ ,=]|$)" <<<"$help" ||
      fail "$sheet: '$line': $program has no flag $flag"
  done
}

# Sets argv to ARGS... with the quick arguments of PROGRAM (sheet_runs.txt's lines whose program
# pattern matches and whose word, if any, is among ARGS) in place of the same flags of ARGS: a
# flag with the words that follow it up to the next flag, or --flag=value. They go before a
# "--", after which a program passes the words on (a benchmark's flags for the lab it runs).
with_quick_arguments() {
  local program=$1
  shift
  argv=("$@")
  local k arg flag skipping split i
  local -a extra kept
  for k in "${!quick_programs[@]}"; do
    # shellcheck disable=SC2053 # the program is a pattern
    [[ $program == ${quick_programs[k]} ]] || continue
    [[ -z ${quick_whens[k]} ]] || is_in "${quick_whens[k]}" "$@" || continue
    mapfile -t extra < <(words_of "${quick_arguments[k]}")
    for flag in "${extra[@]}"; do
      [[ $flag == -* ]] || continue
      flag=${flag%%=*} kept=() skipping=false
      for arg in "${argv[@]}"; do
        if [[ $arg == "$flag" || $arg == "$flag="* ]]; then
          skipping=true
          [[ $arg == *=* ]] && skipping=false
          continue
        fi
        if $skipping && [[ $arg != -* || $arg =~ ^-[0-9.] ]]; then continue; fi
        skipping=false
        kept+=("$arg")
      done
      argv=("${kept[@]}")
    done
    split=${#argv[@]}
    for i in "${!argv[@]}"; do [[ ${argv[i]} == -- ]] && split=$i && break; done
    argv=("${argv[@]:0:split}" "${extra[@]}" "${argv[@]:split}")
  done
}

# Runs PROGRAM ARGS... on RANKS ranks (0: without mpirun) in the scratch folder, a sheet's /tmp
# moved into it; sets output, status and seconds.
execute() {
  local ranks=$1 program=$2
  shift 2
  local -a argv=() moved=()
  local arg start=$SECONDS
  for arg in "$@"; do moved+=("${arg//\/tmp\//$scratch/tmp/}"); done
  with_quick_arguments "$program" "${moved[@]}"
  argv=("$root/$program" "${argv[@]}")
  ((ranks > 0)) && argv=(mpirun "${mpirun_options[@]}" -np "$ranks" "${argv[@]}")
  output=$(cd "$work" && timeout 300 "${argv[@]}" </dev/null 2>&1)
  status=$?
  seconds=$((SECONDS - start))
}

# Runs one resolved command and judges it (see the top).
run_command() {
  local sheet=$1 line=$2
  local stub
  execute "$ranks" "$program" "${args[@]}"
  if ((status == 0)); then
    ran=$((ran + 1))
    echo "ran (${seconds} s): $line"
    return
  fi
  if ! $gpu_visible && [[ " ${args[*]} " == *" --device cuda"* ]] && ((status < 124)) &&
    grep -qE '^error: .*(CUDA|cuda)' <<<"$output"; then
    refused=$((refused + 1))
    echo "refused without a GPU: $line"
    echo "    $(grep -m1 '^error:' <<<"$output")"
    return
  fi
  stub=$(grep -oE -m1 'TODO TP[0-9]+\.[0-9]+: .*\(exercise not written yet' <<<"$output")
  if [[ -n $stub && $program != solutions/* && -x $root/solutions/$program ]] &&
    ((status < 124)); then
    local trainee_seconds=$seconds
    execute "$ranks" "solutions/$program" "${args[@]}"
    if ((status == 0)); then
      stubs=$((stubs + 1))
      echo "stops at ${stub%%:*} (${trainee_seconds} s), the solutions' program runs" \
        "(${seconds} s): $line"
      return
    fi
    line="$line (the solutions' program)"
  fi
  fail "$sheet: '$line' exits with $status after ${seconds} s:"
  tail -5 <<<"$output" | sed 's/^/    /'
}

# Bazel's shards (shard_count in BUILD): shard k of n runs the commands of every n-th section of
# the sheets (a second-level heading's text up to the next one) from the k-th, in order (a
# command may use what an earlier one of its section wrote); every shard reads every sheet, so a
# stale not-run pattern fails each of them.
shards=${TEST_TOTAL_SHARDS:-1} shard=${TEST_SHARD_INDEX:-0}
[[ -n ${TEST_SHARD_STATUS_FILE:-} ]] && touch "$TEST_SHARD_STATUS_FILE"
declare -A seen
found=0 others=0 section=0
for sheet in "${sheets[@]}"; do
  section=$((section + 1))
  while IFS= read -r line; do
    if [[ $line == @@section ]]; then
      section=$((section + 1))
      continue
    fi
    resolve "$sheet" "$line" || continue
    found=$((found + 1))
    not_run_reason "$line" && run=false || run=true
    if ((section % shards != shard)); then
      others=$((others + 1))
      continue
    fi
    if ! $run; then
      parsed=$((parsed + 1))
      echo "parsed, not run ($reason): $line"
      parse_only "$sheet" "$line" "$program" "${args[@]}"
      continue
    fi
    key="$ranks $program ${args[*]}"
    if [[ -n ${seen[$key]:-} ]]; then
      continue
    fi
    seen[$key]=1
    run_command "$sheet" "$line"
  done < <(commands_of "$sheet")
done

for k in "${!not_run_patterns[@]}"; do
  ((not_run_used[k])) ||
    fail "sheet_runs.txt: no sheet command matches the not-run pattern '${not_run_patterns[k]}'"
done
echo "$ran ran, $stubs stopped at an unwritten exercise (their solutions ran), $refused refused" \
  "without a GPU, $parsed parsed but not run, $others left to the other $((shards - 1))" \
  "shard(s) (the sheets' $found commands in all); $failures failed"
((found > 50)) || {
  echo "FAILED: only $found commands found in ${#sheets[@]} sheets: is the extraction broken?"
  exit 1
}
((failures == 0))
