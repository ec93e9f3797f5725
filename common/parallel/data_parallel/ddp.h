// Distributed data parallelism (DDP) over a communicator, as PyTorch builds it: parameters
// broadcast from rank 0 at construction, gradients packed into buckets that are all-reduced
// while the backward pass is still running, then averaged back into each Parameter::grad.
//
// Every rank must reduce the same buckets in the same order (a different order gives wrong
// sums or a hang), so buckets are launched strictly in plan order: bucket k goes out once its
// own gradients and those of every bucket before it are ready.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/kernels/batch_norm.h"
#include "common/nn/module.h"
#include "common/parallel/comm/communicator.h"
#include "common/parallel/data_parallel/bucket_plan.h"
#include "common/tensor/device_timer.h"

namespace course::parallel {

// Reduces one flat f32 bucket in place (summing over ranks); the default is the
// communicator's allreduce. A synchronous reducer returns a completed Work.
using BucketAllreduce = std::function<WorkPtr(Tensor& bucket)>;

struct DdpOptions {
  bool overlap = true;  // launch each bucket during backward (off: all of them after it)
  bool find_unused_parameters = false;  // a parameter with no gradient reduces zeros
};

// Communication of the synchronised steps since construction or reset_stats().
struct DdpStats {
  int64_t steps = 0;
  int64_t collectives = 0;
  int64_t bytes = 0;           // bucket bytes reduced by this rank
  double exposed_seconds = 0;  // the compute stream's wait for the buckets after backward
};

class DistributedDataParallel {
 public:
  DistributedDataParallel(nn::Module& model, std::shared_ptr<Communicator> comm, BucketPlan plan,
                          const DdpOptions& options = {}, BucketAllreduce reduce = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // Gradient accumulation: while off, backward passes only add into the local gradients;
  // the next synchronised step reduces everything accumulated.
  void set_sync(bool sync) { sync_ = sync; }
  bool sync() const { return sync_; }
  // While `local` returns true, no backward pass is reduced either: each rank keeps its own
  // gradients, for an optimizer that averages its own state over the ranks instead (1-bit Adam's
  // compressed momentum, onebit_optimizer.h).
  void keep_gradients_local_while(std::function<bool()> local) { local_ = std::move(local); }
  // Called with each bucket's index (into plan()) once its average is in the gradients, in
  // finish_backward while the later buckets are still in flight: the optimizer in backward
  // updates the bucket's parameters there (optimizer_in_backward.h). The buckets' buffers then
  // live only from their first gradient to that call, as the gradients do.
  void when_bucket_reduced(std::function<void(size_t bucket)> reduced);

  // Call after model.backward(): reduces what is left, waits for every bucket and writes the
  // average over ranks into each gradient. Does nothing while sync is off.
  void finish_backward();

  const BucketPlan& plan() const { return plan_; }
  // Reads the device's timer of the exposed waits (a host wait: for summaries).
  DdpStats stats();
  void reset_stats();

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_
    Tensor flat;                 // the gradients, packed (while the optimizer is in backward:
                                 // from the first packed gradient to the bucket's update)
    int64_t numel = 0;
    size_t pending = 0;  // gradients not yet packed in this backward pass
    WorkPtr work;        // in flight once launched
  };

  void on_grad_ready(const nn::Parameter& p);
  void pack(size_t param);
  void launch_ready_buckets();
  void launch(Bucket& bucket);
  std::string unready_parameters(const Bucket& bucket) const;

  nn::Module& model_;
  std::shared_ptr<Communicator> comm_;
  BucketPlan plan_;
  DdpOptions options_;
  BucketAllreduce reduce_;
  std::vector<std::pair<std::string, nn::Parameter*>> params_;
  std::vector<size_t> bucket_of_, offset_of_;  // per parameter: its bucket and place in it
  std::vector<bool> packed_;                   // per parameter, this backward pass
  std::vector<Bucket> buckets_;
  size_t next_launch_ = 0;
  bool reducing() const { return sync_ && !(local_ && local_()); }

  bool sync_ = true;
  std::function<bool()> local_;  // unset: never local
  std::function<void(size_t)> reduced_;
  DdpStats stats_;
  std::unique_ptr<IntervalTimer> exposed_;  // on the gradients' device, from the first sync
  Device device_;                           // the gradients'
};

// The bytes of each parameter's gradient in parameters() order: what a bucket plan is made from.
std::vector<int64_t> gradient_bytes(nn::Module& model);

// DDP with PyTorch's default buckets (1 MiB first, then 25 MiB), rank 0's weights broadcast:
// what a lab uses unless it plans its own buckets.
std::unique_ptr<DistributedDataParallel> default_ddp(nn::Module& model,
                                                     std::shared_ptr<Communicator> comm);

// Naive data parallelism: parameters and buffers of `model` broadcast from rank 0.
void broadcast_state(nn::Module& model, Communicator& comm);

// The reducer of synchronised batch norm (nn::SyncBatchNormScope): per-channel sums and the
// element count summed over the communicator's ranks.
ChannelSumReducer sync_batch_norm(std::shared_ptr<Communicator> comm);

// Sums of per-rank values (losses, counts) over the ranks, in f32.
std::vector<float> allreduce_sum(const std::vector<float>& values, Communicator& comm);
// The largest of each per-rank value (the slowest rank's time), in f32.
std::vector<float> allreduce_max(const std::vector<float>& values, Communicator& comm);

// How far the ranks' replicas of `model` have drifted apart: the largest difference between two
// ranks' values of one weight (0 when data parallelism keeps them identical, as it should).
float replica_divergence(nn::Module& model, Communicator& comm);

}  // namespace course::parallel
