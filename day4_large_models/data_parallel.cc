// Choosing and driving the GPT lab's data parallelism.
#include "day4_large_models/data_parallel.h"

namespace day4 {

using namespace course;

namespace {

parallel::BackwardPrefetch parse_prefetch(const std::string& name) {
  if (name == "pre") return parallel::BackwardPrefetch::kPre;
  if (name == "post") return parallel::BackwardPrefetch::kPost;
  return parallel::BackwardPrefetch::kNone;
}

// The course's DDP buckets: 25 MiB, the first one 1 MiB.
parallel::BucketPlan default_buckets(nn::Module& model) {
  return parallel::plan_gradient_buckets(parallel::gradient_bytes(model), 25 << 20, 1 << 20);
}

}  // namespace

DataParallelGpt::DataParallelGpt(nn::Gpt& model, std::shared_ptr<parallel::Communicator> comm,
                                 const GptLabOptions& o)
    : model_(model) {
  const std::string ranks = std::to_string(comm->size()) + " rank(s)";
  if (o.sharding != "none") {
    const parallel::ShardingOptions options{
        .sharding = parallel::parse_sharding(o.sharding),
        .backward_prefetch = parse_prefetch(o.backward_prefetch),
        .forward_prefetch = o.forward_prefetch};
    sdp_ = std::make_unique<parallel::ShardedDataParallel>(model_, model_.blocks(), comm, options);
    description_ = o.sharding + " over " + ranks + " (backward prefetch " + o.backward_prefetch +
                   (o.forward_prefetch ? ", forward prefetch)" : ")");
  } else if (comm->size() > 1) {
    ddp_ =
        std::make_unique<parallel::DistributedDataParallel>(model_, comm, default_buckets(model_));
    description_ = "DDP over " + ranks;
  } else {
    description_ = "one process";
  }
}

std::vector<std::pair<std::string, nn::Parameter*>> DataParallelGpt::optimized() {
  return sdp_ ? sdp_->shard_parameters() : model_.state().parameters;
}

void DataParallelGpt::finish_backward() {
  if (ddp_) ddp_->finish_backward();
}

void DataParallelGpt::after_step() {
  if (sdp_) sdp_->after_step();
}

std::string DataParallelGpt::describe() const { return description_; }

}  // namespace day4
