// The per-epoch shuffle of every loader in the course: a permutation of [0, n) that depends only
// on (seed, epoch), so every run and every rank draws the same order for the same epoch.
#pragma once

#include <cstdint>
#include <vector>

namespace course {

std::vector<int64_t> epoch_permutation(int64_t n, uint32_t seed, int64_t epoch);

// The identity order [0, n), for unshuffled passes (validation).
std::vector<int64_t> in_order(int64_t n);

}  // namespace course
