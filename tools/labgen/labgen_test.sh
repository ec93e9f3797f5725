#!/usr/bin/env bash
# labgen replaces exercise regions with loud stubs, keeps everything else, and rejects
# unbalanced markers.
set -euo pipefail
labgen=$1
out=$(printf '%s\n' 'int f() {' '  // BEGIN EXERCISE TP2.3: bucket the "gradients"' '  return 42;' \
  '  // END EXERCISE' '}' | "$labgen" day2_ddp/README.md)
expected=$(printf '%s\n' 'int f() {' '  // BEGIN EXERCISE TP2.3: bucket the "gradients"' \
  '  ::course::exercise_todo("TP2.3", "bucket the \"gradients\"", "day2_ddp/README.md#tp23");' \
  '  // END EXERCISE' '}')
[[ "$out" == "$expected" ]] || { echo "unexpected output:"; echo "$out"; exit 1; }
if printf '%s\n' '// BEGIN EXERCISE TP1.1: a' '// BEGIN EXERCISE TP1.2: b' | "$labgen" x 2>/dev/null; then
  echo "nested exercises were accepted"; exit 1
fi
if printf '%s\n' '// BEGIN EXERCISE TP1.1: a' | "$labgen" x 2>/dev/null; then
  echo "an unterminated exercise was accepted"; exit 1
fi
if printf '%s\n' '// END EXERCISE' | "$labgen" x 2>/dev/null; then
  echo "a stray END was accepted"; exit 1
fi
echo "labgen ok"
