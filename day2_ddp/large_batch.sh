#!/usr/bin/env bash
# TP2.5: small batch against large batch on N ranks, the same number of epochs: the small run
# uses the one-cycle schedule; the large run scales the learning rate linearly from the small
# batch, warms up, and uses a layer-wise adaptive optimizer. Writes both runs' metrics, a
# table of test accuracy per epoch and a PNG of training accuracy against images seen.
#   bazel run //day2_ddp:large_batch -- [--ranks 4] [--epochs 2] [--small 128] [--large 1024]
#                                        [--optimizer lars|lamb|sgd] [--out DIR] [-- LAB FLAGS]
set -euo pipefail
lab=${LAB:-solutions/day2_ddp/lab}
[[ -x $lab ]] || lab="${RUNFILES_DIR:-$0.runfiles}/course/$lab"
ranks=4 epochs=2 small=128 large=1024 optimizer=lars out=${BUILD_WORKING_DIRECTORY:-.}/large_batch
lab_flags=()
while (($#)); do
  case $1 in
    --ranks) ranks=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --small) small=$2; shift 2 ;;
    --large) large=$2; shift 2 ;;
    --optimizer) optimizer=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; lab_flags=("$@"); break ;;
    *) echo "large_batch: unknown option '$1'" >&2; exit 1 ;;
  esac
done
for n in "$ranks" "$epochs" "$small" "$large"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "large_batch: '$n' is not a positive number" >&2; exit 1; }
done
mkdir -p "$out"
rm -f "$out/small.jsonl" "$out/large.jsonl"

run() {  # run NAME FLAGS...
  local name=$1
  shift
  echo "== $name: $*"
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" "$lab" --no-progress \
    --epochs "$epochs" --num-workers 1 --metric-step 10 --metrics "$out/$name.jsonl" "$@" "${lab_flags[@]}" 2>/dev/null |
    grep -E "^(training|epoch|total performance)"
}
run small --global-batch-size "$small" --lr 0.1
run large --global-batch-size "$large" --base-batch "$small" --lr 0.1 --warmup-epochs 0.5 \
  --optimizer "$optimizer"

# JSON lines -> "images accuracy" columns for gnuplot.
columns() { sed -n "s/.*\"images\":\([0-9]*\).*\"$2\":\([0-9.e-]*\).*/\1 \2/p" "$1"; }
columns "$out/small.jsonl" train_accuracy >"$out/small_train.dat"
columns "$out/large.jsonl" train_accuracy >"$out/large_train.dat"
echo "| epoch | test accuracy, batch $small | test accuracy, batch $large ($optimizer) |"
echo "|---:|---:|---:|"
paste -d' ' <(grep -o '"test_accuracy":[0-9.]*' "$out/small.jsonl" | cut -d: -f2) \
  <(grep -o '"test_accuracy":[0-9.]*' "$out/large.jsonl" | cut -d: -f2) |
  awk '{printf "| %d | %.2f%% | %.2f%% |\n", NR, 100 * $1, 100 * $2}'
if command -v gnuplot >/dev/null; then
  gnuplot <<PLOT
set terminal pngcairo size 900,500
set output "$out/accuracy.png"
set xlabel "images seen"
set ylabel "training accuracy (last 10 steps, all ranks)"
set key right bottom
set grid
plot "$out/small_train.dat" using 1:2 with lines lw 2 title "global batch $small, one-cycle", \
     "$out/large_train.dat" using 1:2 with lines lw 2 title "global batch $large, $optimizer, scaled lr + warm-up"
PLOT
  echo "wrote $out/{small,large}.jsonl and $out/accuracy.png"
fi
