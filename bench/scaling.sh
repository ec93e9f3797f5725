#!/usr/bin/env bash
# Strong and weak scaling of the day-2 or day-3 lab (the solutions') over 1, 2, 4 ... ranks: one
# epoch per rank count on synthetic images, its time and images/s from the lab's --metrics, the
# speed-up and the efficiency against ideal (N ranks doing N times the work of one per second).
#   strong: the same images and global batch whatever N (each rank batch / N): time should fall
#           as 1/N;
#   weak:   N times the images at the same batch per rank: time should stay flat.
# Prints a Markdown table and writes scaling.png (images/s against ranks, with the ideal line).
#   bazel run //bench:scaling -- [--lab day2|day3] [--mode strong|weak] [--ranks "1 2 4"]
#       [--images 4096] [--batch 256] [--threads T] [--launcher "mpirun ..."|srun] [--out DIR]
#       [-- LAB FLAGS]
# --threads T gives each rank T compute threads (OMP_NUM_THREADS), so that one rank holds T cores
# and the ranks scale over the node's cores; by default a rank shares the node's cores with the
# node's other ranks (one rank alone holds them all).
# Under Slurm, --launcher srun runs each count with srun -n N (nodes as the allocation has).
set -euo pipefail
runfiles=${RUNFILES_DIR:-$0.runfiles}/course
lab_name=day2 mode=strong ranks="1 2 4" images=4096 batch=256 out=${BUILD_WORKING_DIRECTORY:-.}/scaling
launcher="mpirun --allow-run-as-root --oversubscribe --bind-to none"
extra=() threads=""
while (($#)); do
  case $1 in
    --lab) lab_name=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --images) images=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --launcher) launcher=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "scaling: unknown option '$1'" >&2; exit 1 ;;
  esac
done
case $lab_name in
  day2) lab=$runfiles/solutions/day2_ddp/lab ;;
  day3) lab=$runfiles/solutions/day3_data/lab ;;
  *) echo "scaling: --lab must be day2 or day3, not '$lab_name'" >&2; exit 1 ;;
esac
[[ $mode == strong || $mode == weak ]] || { echo "scaling: --mode must be strong or weak" >&2; exit 1; }
for n in $ranks "$images" "$batch" ${threads:+"$threads"}; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "scaling: '$n' is not a positive number" >&2; exit 1; }
done
first=${ranks%% *}
[[ $first == 1 ]] || { echo "scaling: --ranks must start at 1 (the efficiency's reference)" >&2; exit 1; }
mkdir -p "$out"
table=$out/${lab_name}_$mode.dat
: >"$table"

# The last epoch record's field of a metrics file.
field() { grep '"epoch"' "$1" | tail -1 | sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p"; }

echo "| ranks | images | batch per rank | epoch | images/s | speed-up | efficiency |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
base=""
for n in $ranks; do
  if [[ $mode == strong ]]; then
    (( batch % n == 0 )) || { echo "scaling: --batch $batch does not divide over $n ranks" >&2; exit 1; }
    per_rank=$((batch / n)) total=$images
  else
    per_rank=$batch total=$((images * n))
  fi
  metrics=$out/${lab_name}_${mode}_$n.jsonl
  rm -f "$metrics"
  if [[ $launcher == srun* ]]; then
    run=(env ${threads:+OMP_NUM_THREADS=$threads} $launcher -n "$n")
  else
    run=($launcher -np "$n" ${threads:+-x OMP_NUM_THREADS=$threads})
  fi
  if ! "${run[@]}" "$lab" --synthetic "$total" --batch-size "$per_rank" --epochs 1 --lr 0.05 \
    --device cpu --num-workers 1 --no-progress --metrics "$metrics" "${extra[@]}" >"$metrics.log" 2>&1; then
    echo "scaling: the run on $n rank(s) failed; its output:" >&2
    tail -20 "$metrics.log" >&2
    exit 1
  fi
  rate=$(field "$metrics" images_per_second)
  seconds=$(field "$metrics" epoch_s)
  base=${base:-$rate}
  awk -v n="$n" -v total="$total" -v b="$per_rank" -v s="$seconds" -v r="$rate" -v base="$base" \
    'BEGIN { printf "| %d | %d | %d | %.2f s | %.0f | %.2fx | %.0f%% |\n", n, total, b, s, r, r / base, 100 * r / (n * base) }'
  echo "$n $rate $(awk -v n="$n" -v base="$base" 'BEGIN { print n * base }')" >>"$table"
done
if command -v gnuplot >/dev/null; then
  gnuplot <<PLOT
set terminal pngcairo size 800,500
set output "$out/${lab_name}_$mode.png"
set title "$lab_name lab, $mode scaling ($([[ $mode == strong ]] && echo "$images images, global batch $batch" || echo "$images images and batch $batch per rank")${threads:+, $threads thread(s) per rank})"
set xlabel "ranks"
set ylabel "training images/s"
set logscale x 2
set key left top
set grid
plot "$table" using 1:3 with lines dt 2 lw 2 lc "black" title "ideal (N x one rank)", \
     "$table" using 1:2 with linespoints lw 2 pt 7 title "measured"
PLOT
  echo "wrote $out/${lab_name}_$mode.png"
fi
