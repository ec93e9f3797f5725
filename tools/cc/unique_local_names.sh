#!/usr/bin/env bash
# A grouped compile (grouped_library.bzl) puts several sources of one target in one translation
# unit, where their anonymous namespaces are one namespace: two files' helpers of the same name
# either fail to compile or, with different parameters, become overloads, and a call in one file
# may silently pick the other file's helper. So a function defined in an anonymous namespace
# must be named once among its target's sources. This lists every name defined so in two or
# more sources of one grouped target, and fails if there is one (./test.sh runs it; it asks
# Bazel for the targets, so it is not a bazel test itself).
set -euo pipefail
cd "$(dirname "$0")/../.."
# Each grouped target's C++ sources, one line each: "target file file...".
targets=$(bazel query --noshow_progress 'kind(grouped_objects, //...)' --output=build 2>/dev/null |
  awk -v root="$PWD/" '/^# \// { package = $2; sub(root, "", package); sub(/\/BUILD:.*/, "", package) }
    /^  name = / { gsub(/[",]/, "", $3); name = "//" package ":" $3 }
    /^  srcs = / {
      line = name
      n = split($0, labels, "\"")
      for (i = 2; i <= n; i += 2) if (labels[i] ~ /\.(cc|cu)$/) {
        path = labels[i]; sub(/^\/\//, "", path); sub(/:/, "/", path); sub(/^\//, "", path)
        line = line " " path
      }
      print line
    }')
clashes=$(while read -r target sources; do
  [[ $sources == *" "* ]] || continue  # a target of one source
  # shellcheck disable=SC2086  # the sources are one word each
  awk -v target="$target" '
    FNR == 1 { local = 0 }
    /^namespace \{/ { local = 1; next }
    /^\}  \/\/ namespace$/ { local = 0; next }
    local && /^[A-Za-z_][A-Za-z0-9_:<>,*& ]*[ *&]+[A-Za-z_][A-Za-z0-9_]*\(/ {
      name = $0
      sub(/\(.*/, "", name)
      sub(/.*[ *&]/, "", name)
      if (name !~ /^(TEST|TEST_F|TEST_P|TYPED_TEST|INSTANTIATE_TEST_SUITE_P)$/) print target, name, FILENAME
    }' $sources | sort -u
done <<<"$targets" | awk '{ key = $1 " " $2; files[key] = files[key] " " $3; count[key]++ }
  END { for (key in count) if (count[key] > 1) print key ":" files[key] }' | sort)
if [[ -n $clashes ]]; then
  echo "unique_local_names: functions named alike in one target's anonymous namespaces (rename one):"
  echo "$clashes"
  exit 1
fi
echo "unique_local_names: $(wc -l <<<"$targets") grouped targets, each anonymous-namespace function named once"
