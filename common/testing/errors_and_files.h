// Small helpers of tests: a path in the test's private temporary directory, and the message of
// the course::Error a call throws.
#pragma once

#include <functional>
#include <string>

namespace course::testing {

// `name` inside $TEST_TMPDIR (Bazel's per-test directory), or the system's temporary directory.
std::string temp_path(const std::string& name);

// The what() of the course::Error that `call` throws, or "no error".
std::string error_of(const std::function<void()>& call);

}  // namespace course::testing
