// Batches of (B, T + 1) token windows of a token stream, for next-token training: inputs are a
// row's first T tokens, targets its last T. The stream is cut into non-overlapping windows
// (window k starts at k T and shares its last token with window k + 1); each epoch deals a
// seeded permutation of them over the ranks exactly as the distributed sampler deals images
// (common/data/distributed_sampler.h, the tail cut so every rank takes as many), so runs are
// reproducible and ranks never see the same window in an epoch.
#pragma once

#include <cstdint>
#include <vector>

#include "common/tensor/tensor.h"

namespace course {

struct TokenWindowOptions {
  int64_t batch_size = 16;  // windows per batch on this rank
  int64_t context = 64;     // T
  uint32_t seed = 0;
  bool shuffle = true;
};

// A (B, T + 1) window batch split for next-token training: inputs (B, T) i32 and targets
// (B T,) i64 (the class labels of the cross-entropy), on `device`. An image classifier's batch
// is one too: images (B, C, H, W) and their labels (B,).
struct NextTokenBatch {
  Tensor inputs, targets;
};
NextTokenBatch next_token_batch(const Tensor& windows, Device device);
// Micro-batch `micro` of `batch` cut into `micro_batches` equal parts, as views: inputs and
// targets each cut along their first axis (windows (B / m, T) and their targets (B / m T,),
// images (B / m, ...) and their labels (B / m,)). Throws when the batch does not split evenly.
NextTokenBatch micro_batch_of(const NextTokenBatch& batch, int micro, int micro_batches);

class TokenWindows {
 public:
  // `tokens` is a (n,) i32 stream. Throws when it holds no batch for this rank.
  TokenWindows(Tensor tokens, const TokenWindowOptions& options, int rank = 0, int world_size = 1);

  int64_t windows() const { return windows_; }  // in the whole stream
  int64_t batches() const;                      // per epoch, on this rank
  void set_epoch(int64_t epoch);
  Tensor batch(int64_t index) const;  // (B, T + 1) i32 on the CPU

 private:
  Tensor tokens_;
  TokenWindowOptions options_;
  int rank_, world_size_;
  int64_t windows_;
  std::vector<int64_t> mine_;  // this rank's windows this epoch, in order
};

}  // namespace course
