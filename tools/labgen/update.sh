#!/usr/bin/env bash
# Regenerates every trainee exercise file <day>/X.cc from solutions/<day>/X.cc.
set -euo pipefail
cd "$(dirname "$0")/../.."
bazel build //tools/labgen >/dev/null
for solution in solutions/day*/*.cc; do
  day=$(basename "$(dirname "$solution")")
  grep -q "BEGIN EXERCISE" "$solution" || continue
  bazel-bin/tools/labgen/labgen "$day/README.md" <"$solution" |
    clang-format --assume-filename="$solution" --style=file >"$day/$(basename "$solution")"
  echo "wrote $day/$(basename "$solution")"
done
