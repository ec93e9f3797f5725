// The compressed all-reduce of 1-bit Adam and 1-bit LAMB (Tang et al. 2021; Li et al. 2021): the
// mean of a buffer over the ranks, each rank sending one bit per element and one f32 scale per
// chunk instead of 32 bits per element (common/kernels/sign_compression.h):
//   worker: x plus the worker's error, cut into one chunk per rank, compressed (the worker
//           error keeps what that lost);
//   all-to-all: rank r receives every rank's compressed chunk r;
//   server: rank r averages those copies of its chunk, adds its server error and compresses the
//           mean again (the server error keeps what that lost);
//   all-gather: every rank receives every rank's compressed mean and expands it into x.
// Both errors carry to the next call (error feedback): what one step's compression drops is
// sent in a later step, so the sum of the results over steps tracks the sum of the true means.
#pragma once

#include <cstdint>
#include <memory>

#include "common/parallel/comm/communicator.h"

namespace course::parallel {

class CompressedAllreduce {
 public:
  // For buffers of `numel` values on `device` (the communicator's device or the CPU).
  CompressedAllreduce(int64_t numel, std::shared_ptr<Communicator> comm, Device device);

  // The buffers average_ takes: numel() values then padding to one chunk per rank.
  int64_t padded_numel() const { return chunk_ * comm_->size(); }
  int64_t numel() const { return numel_; }
  int64_t chunk() const { return chunk_; }

  // Collective: x (padded_numel(),) f32 becomes the compressed mean over the ranks of its first
  // numel() values (the padding is ignored and overwritten). Returns once its messages arrived.
  void average_(Tensor& x);

 private:
  int64_t numel_, chunk_;
  std::shared_ptr<Communicator> comm_;
  Tensor worker_error_, server_error_;           // (padded,) and (chunk,)
  Tensor bits_, scales_;                         // this rank's compressed chunks, one per rank
  Tensor received_bits_, received_scales_;       // every rank's copy of this rank's chunk
  Tensor server_mean_, mean_bits_, mean_scale_;  // this rank's chunk averaged, and compressed
  Tensor gathered_bits_, gathered_scales_;       // every rank's compressed mean
};

}  // namespace course::parallel
