#!/usr/bin/env bash
# The project's samplers against Optuna's on the course's synthetic functions, side by side in
# one run: for each function and sampler, the median (and quartiles) over seeds of the best
# value a study of --trials trials finds, and the seconds all its studies took.
#   bench/compare/hpo_compare.sh [--trials 100] [--seeds 20]
# Optuna comes from PyPI into .venv-compare/ (installed on the first run; only this comparison
# uses it).
set -euo pipefail
cd "$(dirname "$0")/../.."
trials=100 seeds=20
while (($#)); do
  case $1 in
    --trials) trials=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    *) echo "hpo_compare: unknown option '$1' (--trials N, --seeds N)" >&2; exit 1 ;;
  esac
done
[[ $trials =~ ^[1-9][0-9]*$ && $seeds =~ ^[1-9][0-9]*$ ]] ||
  { echo "hpo_compare: --trials and --seeds take positive numbers" >&2; exit 1; }

venv=.venv-compare
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "import optuna" 2>/dev/null; then
  echo "== installing optuna into $venv from PyPI (once)"
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q optuna
fi
bazel build -c opt //bench/compare:hpo_search >/dev/null 2>&1 ||
  bazel build -c opt //bench/compare:hpo_search
project=bazel-bin/bench/compare/hpo_search

# quartiles: "median [q1, q3]" of the best values in a run's output.
quartiles() {
  grep '^best ' | awk '{print $3}' | sort -g | awk '{v[NR] = $1}
    function q(p,  i, f) { i = 1 + p * (NR - 1); f = int(i); return v[f] + (i - f) * (v[f + 1] - v[f]) }
    END { printf "%.3g [%.3g, %.3g]", q(0.5), q(0.25), q(0.75) }'
}
seconds() { sed -n 's/^seconds //p'; }

echo "Optuna $("$venv/bin/python" -c 'import optuna; print(optuna.__version__)'): $trials trials" \
  "per study, $seeds seeds (median [quartiles] of the best value found; seconds for all seeds)"
echo
echo "| function | sampler | project | Optuna | project s | Optuna s |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for function in himmelblau rosenbrock; do
  for sampler in tpe tpe:univariate random; do
    ours=$("$project" --function "$function" --sampler "$sampler" --trials "$trials" --seeds "$seeds")
    theirs=$("$venv/bin/python" bench/compare/optuna_side.py --function "$function" \
      --sampler "$sampler" --trials "$trials" --seeds "$seeds")
    echo "| $function | $sampler | $(quartiles <<<"$ours") | $(quartiles <<<"$theirs") |" \
      "$(seconds <<<"$ours") | $(seconds <<<"$theirs") |"
  done
done
