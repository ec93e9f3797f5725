// Choosing and driving a model's data parallelism.
#include "common/parallel/data_parallel/data_parallel_model.h"

#include <nlohmann/json.hpp>
#include <unordered_map>

#include "common/optim/gradient_clipping.h"
#include "common/parallel/data_parallel/gradient_average.h"

namespace course::parallel {

DataParallelModel::DataParallelModel(nn::Module& model, nn::Sequential& blocks,
                                     std::shared_ptr<Communicator> comm,
                                     const DataParallelOptions& o)
    : model_(model), comm_(comm), sharding_(o.sharding) {
  const std::string ranks = std::to_string(comm->size()) + " rank(s)";
  if (o.sharding) {
    const ShardingOptions options{.sharding = *o.sharding,
                                  .backward_prefetch = o.backward_prefetch,
                                  .forward_prefetch = o.forward_prefetch,
                                  .shard_group_size = o.shard_group_size,
                                  .cpu_offload = o.cpu_offload,
                                  .param_dtype = o.param_dtype,
                                  .communication = o.communication};
    sdp_ = std::make_unique<ShardedDataParallel>(model_, blocks, comm, options);
    // DeepSpeed's stage-3 prefetch replaces FSDP's (communication_note says so).
    std::string details;
    if (!o.communication.prefetch_bucket_elements) {
      details += ", backward prefetch " + backward_prefetch_name(o.backward_prefetch);
      if (o.forward_prefetch) details += ", forward prefetch";
    }
    if (o.cpu_offload) details += ", CPU offload";
    if (o.param_dtype != DType::kF32) {
      details += ", " + std::string(dtype_name(o.param_dtype)) + " parameters";
    }
    details += communication_note(o.communication);
    description_ = sharding_name(*o.sharding) + " over " + ranks;
    if (!details.empty()) description_ += " (" + details.substr(2) + ")";
  } else if (comm->size() > 1) {
    ddp_ = std::make_unique<DistributedDataParallel>(
        model_, comm,
        plan_gradient_buckets(gradient_bytes(model_), o.bucket_bytes, o.first_bucket_bytes));
    description_ = "DDP over " + ranks;
  } else {
    description_ = "one process";
  }
}

std::vector<std::pair<std::string, nn::Parameter*>> DataParallelModel::optimized() {
  return sdp_ ? sdp_->shard_parameters() : model_.state().parameters;
}

void DataParallelStep::keep_gradients_local_while(std::function<bool()>) {
  COURSE_FAIL(describe(),
              " reduces every gradient itself; an optimizer that averages its own "
              "state over the ranks (1-bit Adam and LAMB) needs DDP or one process");
}

void DataParallelModel::set_sync(bool sync) {
  sync_ = sync;
  if (ddp_) ddp_->set_sync(sync);
}

std::vector<std::vector<size_t>> DataParallelStep::gradient_groups() {
  COURSE_FAIL(describe(),
              " reduces its gradients into shards; the optimizer in backward needs "
              "DDP or one process");
}

void DataParallelStep::when_gradients_final(std::function<void(size_t)>) { gradient_groups(); }

std::vector<std::vector<size_t>> DataParallelModel::gradient_groups() {
  if (sdp_) return DataParallelStep::gradient_groups();
  if (ddp_) return ddp_->plan();
  std::vector<std::vector<size_t>> one_each;
  for (size_t i = 0; i < model_.parameters().size(); ++i) one_each.push_back({i});
  return one_each;
}

void DataParallelModel::when_gradients_final(std::function<void(size_t)> final) {
  if (sdp_) DataParallelStep::when_gradients_final(std::move(final));
  if (ddp_) {
    ddp_->when_bucket_reduced(std::move(final));
    return;
  }
  // One process: a parameter's gradient is final when its backward completes it, in the
  // micro-batch that ends the step.
  std::unordered_map<const nn::Parameter*, size_t> index;
  const std::vector<nn::Parameter*> params = model_.parameters();
  for (size_t i = 0; i < params.size(); ++i) index[params[i]] = i;
  model_.set_grad_ready_hook([this, index, final](nn::Parameter& p) {
    if (sync_) final(index.at(&p));
  });
}

void DataParallelModel::keep_gradients_local_while(std::function<bool()> local) {
  if (sdp_) DataParallelStep::keep_gradients_local_while(std::move(local));
  if (ddp_) ddp_->keep_gradients_local_while(std::move(local));
}

void DataParallelModel::finish_backward() {
  if (ddp_) ddp_->finish_backward();
}

void DataParallelModel::after_step() {
  if (sdp_) sdp_->after_step();
}

double DataParallelModel::exposed_communication_seconds() {
  if (sdp_) return sdp_->waited_seconds();
  return ddp_ ? ddp_->stats().exposed_seconds : 0;
}

Tensor DataParallelModel::squared_gradient_norm() {
  if (sdp_) return sdp_->squared_gradient_norm();
  return optim::squared_gradient_sum(model_.parameters());  // DDP: every rank holds the average
}

double DataParallelModel::bytes_sent() const {
  return sdp_ ? sdp_->bytes_sent() : comm_->traffic().bytes;
}

std::string DataParallelModel::describe() const { return description_; }

nlohmann::json checkpoint_layout(const DataParallelStep& step) {
  if (step.shard_group_size() == 0) return nlohmann::json::object();
  return {{"sharding", step.mode_name()}, {"shard_group_size", step.shard_group_size()}};
}

}  // namespace course::parallel
