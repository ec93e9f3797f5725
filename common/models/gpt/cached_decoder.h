// A decoder-only model (gpt.h, either family) run on tokens at any positions of any sequences
// against a paged key/value cache (kv_cache.h): the same layers and weights as the training
// forward, but each block's attention reads the cached keys and values of its sequence's past
// instead of recomputing the prefix, so a new token costs one position. A prompt's tokens and the
// running sequences' last tokens go through one call (continuous batching's mixed step).
#pragma once

#include <cstdint>
#include <vector>

#include "common/models/gpt/gpt.h"
#include "common/models/gpt/kv_cache.h"

namespace course::nn {

struct DecoderRows {
  std::vector<int32_t> tokens;
  std::vector<int32_t> sequences;  // each row's slot of the cache
  std::vector<int32_t> positions;  // each row's position in its sequence
};

class CachedDecoder {
 public:
  // `model` in evaluation mode for as long as the decoder runs it.
  CachedDecoder(Gpt& model, PagedKvCache& cache);

  // The rows' logits (N, V) f32 on the model's device, their keys and values now cached. Each
  // sequence's positions before a row's must be cached already or be earlier rows of this call.
  Tensor logits(const DecoderRows& rows);

 private:
  Tensor block_forward(int64_t layer, const Tensor& x, const CacheRows& rows);

  Gpt& model_;
  PagedKvCache& cache_;
  GroupedHeads heads_;
  Device device_;
};

}  // namespace course::nn
