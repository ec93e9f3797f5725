#!/usr/bin/env bash
# A lab sheet's table of runs, one row a set of flags: the lab run with the table's flags and
# the row's, and the columns the sheet shows read from the lab's output. The sheets declare such
# tables as figures (sheet_figures.h), which `//tools/labsheet:figures` remakes with it:
#   tools/labsheet/lab_table.sh LAB 'FLAGS OF EVERY ROW' COLUMNS [ROW'S FLAGS]...
# COLUMNS, comma-separated, in the table's order:
#   accuracy  the last epoch's test accuracy          images  training images/s
#   epochN    epoch N's test accuracy
#   memory    max memory allocated                    wall    the run's wall time (its test pass
#   norms     the gradient norm's last and largest            included)
#   clipped   the steps clipped (--clip-grad-norm)
# A row without flags is "(none)"; the others show their flags as code. A run that fails ends
# the table with its output and status.
set -uo pipefail
(($# >= 4)) || {
  echo "usage: lab_table.sh LAB 'FLAGS OF EVERY ROW' COLUMNS ROW'S-FLAGS..." >&2
  exit 2
}
lab=$1 common=$2 columns=$3
shift 3
declare -A title=([accuracy]="test accuracy" [images]="training images/s"
  [memory]="max memory allocated" [wall]="epoch wall time"
  [norms]="gradient norm: last, largest" [clipped]="clipped")
IFS=, read -ra wanted <<<"$columns"
header=flags
for c in "${wanted[@]}"; do
  [[ $c =~ ^epoch([0-9]+)$ ]] && title[$c]="epoch ${BASH_REMATCH[1]}"
  [[ -n ${title[$c]:-} ]] || {
    echo "lab_table: no column '$c' (accuracy, epochN, images, memory, wall, norms, clipped)" >&2
    exit 2
  }
  header+="  ${title[$c]}"
done

# with_thousands 2673.4 -> 2,673
with_thousands() { printf "%.0f" "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }
cell() {  # column output seconds
  case $1 in
    accuracy) sed -n 's/^epoch [0-9]*:.*test accuracy \([0-9.]*%\).*/\1/p' <<<"$2" | tail -1 ;;
    epoch*) sed -n "s/^epoch ${1#epoch}:.*test accuracy \([0-9.]*%\).*/\1/p" <<<"$2" ;;
    images) with_thousands "$(sed -n 's/^training performance *\([0-9.]*\) .*/\1/p' <<<"$2")" ;;
    memory) sed -n 's/^max memory allocated *\([0-9.]*\) MiB.*/\1/p' <<<"$2" |
      awk '{ printf "%.1f MiB", $1 }' ;;
    wall) printf "%.0f s" "$3" ;;
    norms) sed -n 's/^gradient norm: last \([0-9.]*\), largest \([0-9.]*\),.*/\1, \2/p' <<<"$2" ;;
    clipped) sed -n 's/^gradient norm: .* in \([0-9]* of [0-9]*\) steps.*/\1 steps/p' <<<"$2" ;;
  esac
}

echo "$header"
for flags in "$@"; do
  start=$(date +%s.%N)
  # shellcheck disable=SC2086  # the flags are words
  output=$("$lab" $common $flags 2>&1)
  status=$?
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  if ((status != 0)); then
    echo "$output"
    echo "lab_table: '$lab $common $flags' failed (exit $status)" >&2
    exit "$status"
  fi
  line=$([[ -z $flags ]] && echo "(none)" || echo "\`$flags\`")
  for c in "${wanted[@]}"; do
    value=$(cell "$c" "$output" "$seconds")
    [[ -n $value ]] || {
      echo "$output"
      echo "lab_table: the run with '$flags' printed no $c" >&2
      exit 1
    }
    line+="  $value"
  done
  echo "$line"
done
