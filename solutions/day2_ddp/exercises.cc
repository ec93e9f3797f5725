// Day 2 exercises TP2.1-TP2.5 (the lab sheet is day2_ddp/README.md).
// solutions/day2_ddp/exercises.cc is the complete version; day2_ddp/exercises.cc is generated
// from it by tools/labgen with every exercise replaced by a stub: trainees edit that one.
#include "day2_ddp/exercises.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/core/exercise.h"
#include "common/data/permutation.h"
#include "common/kernels/elementwise.h"

namespace day2 {

std::vector<int64_t> rank_indices(const SamplerOptions& options, int rank, int world_size,
                                  int64_t epoch) {
  // BEGIN EXERCISE TP2.1: this rank's share of the epoch's (padded or cut) order
  const int64_t n = options.dataset_size, p = world_size;
  std::vector<int64_t> order =
      options.shuffle ? course::epoch_permutation(n, options.seed, epoch) : course::in_order(n);
  const int64_t per_rank = options.drop_last ? n / p : (n + p - 1) / p;
  const int64_t total = per_rank * p;
  for (int64_t i = n; i < total; ++i) order.push_back(order[i % n]);
  std::vector<int64_t> mine;
  for (int64_t i = rank; i < total; i += p) mine.push_back(order[i]);
  return mine;
  // END EXERCISE
}

void allreduce_gradients(const std::vector<nn::Parameter*>& params, parallel::Communicator& comm) {
  // BEGIN EXERCISE TP2.2: one all-reduce per gradient, then the average over the ranks
  for (nn::Parameter* p : params) {
    comm.allreduce(p->grad)->wait();
    course::scale_(p->grad, 1.0f / static_cast<float>(comm.size()));
  }
  // END EXERCISE
}

parallel::BucketPlan plan_buckets(const std::vector<int64_t>& param_bytes, int64_t cap_bytes,
                                  int64_t first_cap_bytes) {
  // BEGIN EXERCISE TP2.3: reverse order; close a bucket once it reaches its cap
  parallel::BucketPlan plan;
  int64_t filled = 0;
  bool open = false;
  for (size_t i = param_bytes.size(); i-- > 0;) {
    if (!open) {
      plan.emplace_back();
      filled = 0;
      open = true;
    }
    plan.back().push_back(i);
    filled += param_bytes[i];
    if (filled >= (plan.size() == 1 ? first_cap_bytes : cap_bytes)) open = false;
  }
  return plan;
  // END EXERCISE
}

void ring_allreduce(Tensor& data, parallel::Communicator& comm) {
  // BEGIN EXERCISE TP2.4: reduce-scatter then all-gather around the ring, one exchange a step
  const int p = comm.size(), r = comm.rank();
  const int64_t n = data.numel();
  if (p == 1 || n == 0) return;
  const auto begin = [&](int chunk) { return n * chunk / p; };
  const auto chunk_of = [&](int chunk) {
    return data.view({n}).slice(begin(chunk), begin(chunk + 1));
  };
  const int next = (r + 1) % p, previous = (r + p - 1) % p;
  Tensor incoming = Tensor::empty({begin(1) + 1}, course::DType::kF32, data.device());
  for (int step = 0; step < p - 1; ++step) {  // after it, rank r holds the sum of chunk r + 1
    const int send_chunk = (r - step + p) % p, recv_chunk = (r - step - 1 + 2 * p) % p;
    Tensor received = chunk_of(recv_chunk);
    Tensor buffer = incoming.slice(0, received.numel());
    comm.exchange({parallel::send_to(chunk_of(send_chunk), next),
                   parallel::receive_from(buffer, previous)})
        ->wait();
    course::axpy_(1.0f, buffer, received);
  }
  for (int step = 0; step < p - 1; ++step) {
    const int send_chunk = (r + 1 - step + p) % p, recv_chunk = (r - step + p) % p;
    Tensor received = chunk_of(recv_chunk);
    comm.exchange({parallel::send_to(chunk_of(send_chunk), next),
                   parallel::receive_from(received, previous)})
        ->wait();
  }
  // END EXERCISE
}

float large_batch_lr(int64_t step, const LargeBatchSchedule& s) {
  // BEGIN EXERCISE TP2.5: linear scaling rule, linear warm-up from base_lr, then cosine to 0
  const float peak = s.base_lr * static_cast<float>(s.global_batch) / s.base_batch;
  if (step < s.warmup_steps) {
    return s.base_lr + (peak - s.base_lr) * static_cast<float>(step) / s.warmup_steps;
  }
  const double progress = static_cast<double>(step - s.warmup_steps) /
                          std::max<int64_t>(s.total_steps - s.warmup_steps, 1);
  return static_cast<float>(peak * 0.5 *
                            (1.0 + std::cos(std::numbers::pi * std::min(progress, 1.0))));
  // END EXERCISE
}

}  // namespace day2
