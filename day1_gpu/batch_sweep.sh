#!/usr/bin/env bash
# "GPU under the hood": runs the day-1 lab over batch sizes and reports throughput and peak
# memory against batch size, as a table (stdout and <out>.md), a CSV and a PNG plot (gnuplot).
#
#   bazel run //day1_gpu:batch_sweep -- [--sizes 8,16,...,512] [--out DIR] [--steps N]
#                                       [-- lab flags, e.g. --amp --channels-last]
# Runs that run out of memory (e.g. under --max-memory-mb) are kept in the table as OOM.
set -euo pipefail

lab=${LAB:-solutions/day1_gpu/lab}
[[ -x $lab ]] || lab="${RUNFILES_DIR:-$0.runfiles}/course/$lab"
sizes=8,16,32,64,128,256,512
out=${BUILD_WORKING_DIRECTORY:-.}/batch_sweep
steps=10
lab_flags=()
while (($#)); do
  case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --) shift; lab_flags=("$@"); break ;;
    *) echo "batch_sweep: unknown option '$1' (use --sizes, --out, --steps, then -- lab flags)" >&2
       exit 1 ;;
  esac
done
[[ "$sizes" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "batch_sweep: --sizes takes numbers like 8,16,32" >&2; exit 1; }
[[ "$steps" =~ ^[1-9][0-9]*$ ]] || { echo "batch_sweep: --steps takes a positive number" >&2; exit 1; }
mkdir -p "$out"

to_mib() {  # "166.01 MiB" -> 166.01
  awk '{v=$1; u=$2; f=(u=="B")?1/1048576:(u=="KiB")?1/1024:(u=="MiB")?1:(u=="GiB")?1024:1048576; printf "%.2f", v*f}' <<<"$1"
}

csv="$out/sweep.csv"
echo "batch_size,images_per_second,max_memory_mib,status" >"$csv"
printf '| batch size | images/s | max memory allocated (MiB) |\n|---:|---:|---:|\n' >"$out/sweep.md"
for b in ${sizes//,/ }; do
  set +e
  log=$("$lab" --test --test-nsteps "$steps" --batch-size "$b" --no-progress "${lab_flags[@]}" 2>&1)
  status=$?
  set -e
  if [[ $status -eq 2 ]]; then
    echo "$b,,,OOM" >>"$csv"
    echo "| $b | OOM | OOM |" >>"$out/sweep.md"
    continue
  elif [[ $status -ne 0 ]]; then
    echo "batch_sweep: the lab failed at batch size $b:" >&2
    echo "$log" >&2
    exit "$status"
  fi
  ips=$(sed -n 's/^training performance *\([0-9.]*\) images.*/\1/p' <<<"$log")
  mem=$(to_mib "$(sed -n 's/^max memory allocated *//p' <<<"$log")")
  echo "$b,$ips,$mem,ok" >>"$csv"
  echo "| $b | $ips | $mem |" >>"$out/sweep.md"
done
cat "$out/sweep.md"

if command -v gnuplot >/dev/null; then
  gnuplot <<PLOT
set terminal pngcairo size 900,500
set output "$out/sweep.png"
set datafile separator ","
set key autotitle columnhead left top
set logscale x 2
set xlabel "batch size"
set ylabel "images/s"
set y2label "max memory allocated (MiB)"
set ytics nomirror
set y2tics
set grid
plot "$csv" using 1:2 with linespoints lw 2 title "images/s", \
     "$csv" using 1:3 axes x1y2 with linespoints lw 2 title "max memory (MiB)"
PLOT
  echo "wrote $csv, $out/sweep.md and $out/sweep.png"
else
  echo "wrote $csv and $out/sweep.md (install gnuplot for the plot)"
fi
