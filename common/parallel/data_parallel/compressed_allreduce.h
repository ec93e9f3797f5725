// The compressed all-reduce of 1-bit Adam and 1-bit LAMB (Tang et al. 2021; Li et al. 2021), as
// DeepSpeed computes it (runtime/comm/nccl.py's compressed_allreduce, per parameter tensor): the
// mean of a buffer over the ranks, each rank sending one bit per element and one f32 scale per
// tensor instead of 32 bits per element (common/kernels/sign_compression.h):
//   layout: each tensor padded to a multiple of ranks x lcm(ranks, 8) elements (DeepSpeed's
//           corrected_tensor_size), so it cuts into one whole-byte chunk per rank;
//   worker: each tensor plus the worker's error compressed to signs scaled by its root mean
//           square (the worker error keeps what that lost);
//   all-to-all: rank r receives every rank's chunk r of every tensor, and every rank's scales;
//   server: rank r's chunks are the sum over the ranks of sign x scale / ranks, plus its server
//           error, compressed again per tensor chunk by their root mean square;
//   all-gather: every rank receives every rank's compressed chunks and expands them into x.
// Both errors carry to the next call (error feedback): what one step's compression drops is
// sent in a later step. One rank exchanges and compresses nothing (DeepSpeed: size 1).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/kernels/sign_compression.h"
#include "common/parallel/comm/communicator.h"

namespace course::parallel {

// A worker's compression of one padded tensor: `values` plus `error` (updated in place with what
// is not sent) into what it sends, one scale with each element's sign (TP4.22's onebit_compress,
// day4_large_models/exercises.h, in place of the library's kernel; on the CPU).
using WorkerCompression = std::function<Tensor(const Tensor& values, Tensor& error)>;

// DeepSpeed's padded size of a tensor of `numel` elements over `ranks`.
int64_t padded_tensor_numel(int64_t numel, int ranks);

class CompressedAllreduce {
 public:
  // For buffers of tensors of these sizes on `device` (the communicator's device or the CPU);
  // `worker`, when set, compresses each tensor on the workers' side.
  CompressedAllreduce(const std::vector<int64_t>& numels, std::shared_ptr<Communicator> comm,
                      Device device, WorkerCompression worker = nullptr);

  // The buffer average_ takes: tensor t at offset(t), then its padding.
  int64_t padded_numel() const { return padded_numel_; }
  int64_t offset(size_t tensor) const { return offsets_[tensor]; }

  // Collective: x (padded_numel(),) f32, each tensor's padding zero, becomes the compressed
  // mean over the ranks, its padding zero again (DeepSpeed pads each call with zeros and drops
  // the padding after; its errors keep theirs). Returns once its messages arrived.
  void average_(Tensor& x);

  // The errors each rank carries between calls (for checkpoints): (padded,) and (padded/ranks,).
  Tensor& worker_error() { return worker_error_; }
  Tensor& server_error() { return server_error_; }

 private:
  void exchange_worker_signs();
  void compress_with_worker(const Tensor& x);

  std::shared_ptr<Communicator> comm_;
  WorkerCompression worker_;
  std::vector<int64_t> offsets_;
  int64_t padded_numel_ = 0;
  SegmentPlan worker_plan_, server_plan_;  // the tensors; this rank's chunk of each
  Tensor worker_error_, server_error_;
  Tensor bits_, scales_;                    // this rank's signs (rank-major) and scales
  Tensor received_bits_, received_scales_;  // every rank's signs of this rank's chunks, scales
  Tensor server_sum_, server_bits_, server_scales_;  // this rank's chunks, summed and compressed
  Tensor gathered_bits_, gathered_scales_;           // every rank's compressed chunks
};

}  // namespace course::parallel
