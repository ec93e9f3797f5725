// Where a command was started: `bazel run` starts a program in its runfiles tree, so a relative
// path the user typed is meant from the folder bazel was run in (BUILD_WORKING_DIRECTORY).
#pragma once

#include <string>

namespace course {

// A relative path as the user meant it: from the folder `bazel run` started in, else from the
// current folder. Absolute paths (and the empty one) are kept.
std::string invocation_path(const std::string& path);

}  // namespace course
