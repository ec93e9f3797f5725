#!/usr/bin/env bash
# Coverage tools are downloaded by Bazel on demand; this offline build does not have them.
echo "bazel coverage is not available in this offline build (no remote_coverage_tools)" >&2
exit 1
