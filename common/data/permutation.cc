// Seeded per-epoch permutations.
#include "common/data/permutation.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace course {

std::vector<int64_t> in_order(int64_t n) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

std::vector<int64_t> epoch_permutation(int64_t n, uint32_t seed, int64_t epoch) {
  std::vector<int64_t> order = in_order(n);
  std::mt19937_64 rng(seed * 1000003ull + static_cast<uint64_t>(epoch));
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

}  // namespace course
