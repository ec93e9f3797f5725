// One model trained by several ranks in any of the course's data-parallel modes: alone, DDP
// (no sharding on several ranks) or sharded data parallelism (ZeRO 1-3, FSDP's strategies,
// sharding.h). A training step runs forward and backward through net(), gives the optimizer
// optimized(), and calls finish_backward() and after_step() around the optimizer's step,
// whichever the mode.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/nn/sequential.h"
#include "common/parallel/data_parallel/bucket_plan.h"
#include "common/parallel/data_parallel/ddp.h"
#include "common/parallel/data_parallel/sharded_data_parallel.h"

namespace course::parallel {

struct DataParallelOptions {
  std::optional<Sharding> sharding;  // none: DDP on several ranks, one process alone
  BackwardPrefetch backward_prefetch = BackwardPrefetch::kPre;
  bool forward_prefetch = false;
  int shard_group_size = 0;         // hybrid-shard's group (0: the ranks of a node)
  bool cpu_offload = false;         // the shards in host memory
  DType param_dtype = DType::kF32;  // sharded modes' compute copies (f16/bf16: mixed precision)
  ZeroCommunication communication;  // sharded modes' buckets and overlap (DeepSpeed's keys)
  int64_t bucket_bytes = kBucketCapBytes;  // DDP's buckets
  int64_t first_bucket_bytes = kFirstBucketCapBytes;
};

// What a training step asks of its data-parallel mode (this file's modes, or a lab's own).
class DataParallelStep {
 public:
  virtual ~DataParallelStep() = default;
  virtual nn::Module& net() = 0;  // what forward and backward run through
  virtual std::vector<std::pair<std::string, nn::Parameter*>> optimized() = 0;
  // Gradient accumulation: gradients of backward passes run with sync off stay local where the
  // mode allows it (DDP), and are reduced with the next synchronised one.
  virtual void set_sync(bool sync) = 0;
  // While `local` returns true, backward passes leave each rank its own gradients (no
  // reduction): an optimizer that averages its own state over the ranks instead asks for it (1-bit
  // Adam's compressed momentum, common/parallel/data_parallel/onebit_optimizer.h). Only DDP (and
  // one process) can; the other modes refuse.
  virtual void keep_gradients_local_while(std::function<bool()> local);
  // The optimizer in backward (optimizer_in_backward.h): the optimized() parameters in the groups
  // whose gradients become final together, and `final(group)` called for each group once per
  // synchronised step as soon as they are (DDP: after each bucket's all-reduce; one process:
  // each parameter as its backward completes it). Only DDP and one process can; the sharded
  // modes refuse.
  virtual std::vector<std::vector<size_t>> gradient_groups();
  virtual void when_gradients_final(std::function<void(size_t group)> final);
  virtual void finish_backward() = 0;  // after the step's (last) backward pass
  virtual void after_step() = 0;       // after the optimizer's step
  virtual std::string describe() const = 0;
  // As the flags name the mode ("none", "zero3", ...): what its sharded checkpoints depend on.
  virtual std::string mode_name() const = 0;
  // The ranks one copy of the model is cut over (0: not sharded).
  virtual int shard_group_size() const = 0;
  // Seconds spent waiting for communication (not hidden behind computation) so far.
  virtual double exposed_communication_seconds() = 0;
  // Bytes this rank's collectives sent so far, over every group the mode uses.
  virtual double bytes_sent() const = 0;
  // Collective: the squared L2 norm of the whole model's gradient once reduced (after
  // finish_backward), each element counted once: over the shards a sharded mode keeps.
  virtual Tensor squared_gradient_norm() = 0;
};

// What a checkpoint's files depend on in `step`'s mode: {"sharding", "shard_group_size"} when
// each rank saves its own shards, else nothing (one file of the whole model).
nlohmann::json checkpoint_layout(const DataParallelStep& step);

class DataParallelModel : public DataParallelStep {
 public:
  // Collective over `comm`; `blocks` is the Sequential of `model`'s repeated blocks.
  DataParallelModel(nn::Module& model, nn::Sequential& blocks, std::shared_ptr<Communicator> comm,
                    const DataParallelOptions& options);

  nn::Module& net() override { return sdp_ ? static_cast<nn::Module&>(*sdp_) : model_; }
  ShardedDataParallel* sharded() { return sdp_.get(); }  // null unless sharded
  std::vector<std::pair<std::string, nn::Parameter*>> optimized() override;
  // DDP reduces only the backward passes run with sync on (the sharded modes reduce every
  // micro-batch into the shards, which add up).
  void set_sync(bool sync) override;
  void keep_gradients_local_while(std::function<bool()> local) override;
  std::vector<std::vector<size_t>> gradient_groups() override;
  void when_gradients_final(std::function<void(size_t group)> final) override;
  void finish_backward() override;        // DDP's average (the sharded modes reduce in backward)
  void after_step() override;             // ZeRO-1/2's all-gather of the updated shards
  std::string describe() const override;  // "zero3 over 4 ranks (backward prefetch pre)"
  std::string mode_name() const override { return data_parallel_mode_name(sharding_); }
  int shard_group_size() const override { return sdp_ ? sdp_->shard_group_size() : 0; }
  double exposed_communication_seconds() override;
  double bytes_sent() const override;
  Tensor squared_gradient_norm() override;

 private:
  nn::Module& model_;
  std::shared_ptr<Communicator> comm_;  // DDP's (the sharded modes count their own groups)
  std::optional<Sharding> sharding_;
  std::string description_;
  std::unique_ptr<DistributedDataParallel> ddp_;
  std::unique_ptr<ShardedDataParallel> sdp_;
  bool sync_ = true;  // one process: whether this backward pass ends the step
};

}  // namespace course::parallel
