// The day-2 exercises (TP2.1-TP2.5): what the trainee writes in day2_ddp/exercises.cc. The
// complete versions are in solutions/day2_ddp/exercises.cc; the lab program calls these
// functions, and //day2_ddp:check tests them on 2, 3 and 4 MPI ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "common/data/distributed_sampler.h"
#include "common/nn/module.h"
#include "common/parallel/comm/communicator.h"
#include "common/parallel/data_parallel/ddp.h"

namespace day2 {

using course::SamplerOptions;
using course::Tensor;
namespace nn = course::nn;
namespace parallel = course::parallel;

// TP2.1: PyTorch's DistributedSampler. The epoch's order is epoch_permutation(size, seed,
// epoch) (or 0..size-1 without shuffle). Without drop_last it is padded by repeating its
// first indices until every rank gets ceil(size / world_size) samples; with drop_last it is
// cut to floor(size / world_size) samples per rank. Rank r takes positions r, r + world_size,
// r + 2 world_size, ... of that list.
std::vector<int64_t> rank_indices(const SamplerOptions& options, int rank, int world_size,
                                  int64_t epoch);

// TP2.2: naive data parallelism after backward: every gradient all-reduced on its own
// (one collective per parameter), then divided by the number of ranks.
void allreduce_gradients(const std::vector<nn::Parameter*>& params, parallel::Communicator& comm);

// TP2.3: DDP's bucket assignment. Parameters go into buckets in reverse order (the order the
// backward pass produces their gradients); a bucket is closed as soon as its size reaches its
// cap: first_cap_bytes for the first bucket, cap_bytes for the others.
parallel::BucketPlan plan_buckets(const std::vector<int64_t>& param_bytes, int64_t cap_bytes,
                                  int64_t first_cap_bytes);

// TP2.4: ring all-reduce (sum) of a contiguous f32 CPU tensor from send/recv only: split it
// into world_size chunks (sizes differing by at most one element), reduce-scatter around the
// ring in world_size - 1 steps, then all-gather in world_size - 1 steps. Each step's send and
// receive go in one comm.exchange() group: posted apart they deadlock (NCCL, and MPI past its
// eager limit).
void ring_allreduce(Tensor& data, parallel::Communicator& comm);

// TP2.5: the large-batch learning rate (Goyal et al.): the linear scaling rule gives the peak
// base_lr * global_batch / base_batch; warm up linearly from base_lr to the peak over
// warmup_steps (step 0 is base_lr), then follow a cosine from the peak down to 0 at
// total_steps.
struct LargeBatchSchedule {
  float base_lr = 0.1f;
  int64_t base_batch = 256;
  int64_t global_batch = 256;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
};
float large_batch_lr(int64_t step, const LargeBatchSchedule& schedule);

}  // namespace day2
