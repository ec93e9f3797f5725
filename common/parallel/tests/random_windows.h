// A parity test's language-model batches: 16 windows of random tokens and random next tokens,
// drawn from `seed`, of which a replica takes windows [first, first + count) (inputs (count, T)
// i32, targets (count T,) i64), so every rank can cut its share of the one batch a single
// process trains on.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "common/data/token_windows.h"

namespace course::parallel {

inline NextTokenBatch random_windows(uint32_t seed, int64_t context, int64_t vocabulary,
                                     int64_t first, int64_t count) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocabulary - 1));
  std::vector<int32_t> tokens(16 * context);
  std::vector<int64_t> targets(tokens.size());
  for (auto& t : tokens) t = token(rng);
  for (auto& t : targets) t = token(rng);
  const int64_t from = first * context, to = (first + count) * context;
  return {
      Tensor::from_vector<int32_t>({tokens.begin() + from, tokens.begin() + to}, {count, context}),
      Tensor::from_vector<int64_t>({targets.begin() + from, targets.begin() + to}, {to - from})};
}

}  // namespace course::parallel
