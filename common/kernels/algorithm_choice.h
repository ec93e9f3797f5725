// Choosing a library algorithm (cuDNN's convolution algorithms, ranked fastest first by its
// heuristics): the first that the library reports as usable whose workspace can be had. A
// workspace that does not fit falls back to the next candidate instead of failing the step,
// and the choice is made once per shape (the caller caches it).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

namespace course {

struct AlgorithmCandidate {
  int algorithm;
  bool usable;             // the library's status for it was success
  size_t workspace_bytes;  // what it needs
};

// The index of the first usable candidate for which `take_workspace(bytes)` succeeds (it
// allocates and keeps the workspace, or returns false); nullopt when none does.
std::optional<size_t> choose_algorithm(const std::vector<AlgorithmCandidate>& ranked,
                                       const std::function<bool(size_t bytes)>& take_workspace);

}  // namespace course
