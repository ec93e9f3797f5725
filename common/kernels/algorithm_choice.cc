// The first usable algorithm whose workspace fits.
#include "common/kernels/algorithm_choice.h"

namespace course {

std::optional<size_t> choose_algorithm(const std::vector<AlgorithmCandidate>& ranked,
                                       const std::function<bool(size_t bytes)>& take_workspace) {
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (ranked[i].usable && take_workspace(ranked[i].workspace_bytes)) return i;
  }
  return std::nullopt;
}

}  // namespace course
