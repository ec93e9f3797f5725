#!/usr/bin/env bash
# Trials per second of one study's workers on each study store, on a microsecond objective (the
# Himmelblau function, random sampler: what is measured is the store, not the objective or the
# sampler): 1 and 8 `hpo worker` processes at once on a SQLite file (WAL; the rollback journal
# that several nodes need) and on a private PostgreSQL server on this machine
# (tools/postgres/private_server.sh), as a Markdown table. Each trial is a worker's ask and tell
# transactions; the seconds run from the first trial's start to the last one's end as the study
# recorded them (the workers' own start-up, about 0.2 s each, is not counted).
#   bench/study_store_throughput.sh [--trials N]   (N per worker, default 100)
set -euo pipefail
cd "$(dirname "$0")/.."
trials=100
while (($#)); do
  case $1 in
    --trials) trials=$2; shift 2 ;;
    *) echo "study_store_throughput: unknown option '$1' (--trials N)" >&2; exit 1 ;;
  esac
done
[[ $trials =~ ^[1-9][0-9]*$ ]] || { echo "study_store_throughput: --trials takes a positive whole number" >&2; exit 1; }
bazel build -c opt --noshow_progress --ui_event_filters=-info //solutions/day3_data:hpo
hpo=bazel-bin/solutions/day3_data/hpo
work=$(mktemp -d)
trap 'tools/postgres/private_server.sh remove "$work/server" >/dev/null 2>&1; rm -rf "$work"' EXIT
server=$(tools/postgres/private_server.sh start "$work/server" 127.0.0.1)
export PGPASSFILE=$work/server/pgpass

# row STORE LABEL WORKERS [create flags]: a new study on STORE, WORKERS workers of $trials
# trials each at once, the table's row.
study=0
row() {
  local store=$1 label=$2 workers=$3 seconds
  shift 3
  study=$((study + 1))
  "$hpo" create --db "$store" --study "s$study" --function himmelblau --sampler random "$@" \
    >/dev/null
  local pids=()
  for ((w = 0; w < workers; w++)); do
    "$hpo" worker --db "$store" --study "s$study" --trials "$trials" >/dev/null &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  "$hpo" status --db "$store" --study "s$study" |
    grep -q "$((workers * trials)) trials: $((workers * trials)) complete" ||
    { echo "study_store_throughput: $label lost trials" >&2; exit 1; }
  mkdir -p "$work/s$study"
  "$hpo" plot --db "$store" --study "s$study" --out "$work/s$study" >/dev/null
  seconds=$(awk -F, 'NR > 1 && $5 > last { last = $5 } END { print last }' "$work/s$study/trials.csv")
  printf '| %-32s | %7d | %6d | %8.2f | %8.1f |\n' "$label" "$workers" "$((workers * trials))" \
    "$seconds" "$(echo "$workers * $trials / $seconds" | bc -l)"
}

echo "| store | workers | trials | seconds | trials/s |"
echo "| --- | ---: | ---: | ---: | ---: |"
for workers in 1 8; do
  row "$work/wal.db" "SQLite, WAL" "$workers" --journal wal
  row "$work/delete.db" "SQLite, rollback journal" "$workers" --journal delete
  row "$server" "PostgreSQL 15 (private server)" "$workers"
done
