// Gathering, releasing and reducing one flat parameter's shards.
#include "common/parallel/sharded_unit.h"

#include "common/kernels/elementwise.h"

namespace course::parallel {

namespace {

Tensor zeros_on(int64_t numel, Device device) { return zeros({numel}, DType::kF32, device); }

// Rank 0's values broadcast, then this rank's part of them copied out with a zero gradient.
nn::Parameter take_shard(nn::FlatParameters& flat, Communicator& comm) {
  comm.broadcast(flat.values(), 0)->wait();
  const nn::FlatRange mine = flat.shard(comm.rank());
  return nn::Parameter(flat.values().slice(mine.begin, mine.end).clone(),
                       zeros_on(mine.size(), flat.device()));
}

}  // namespace

ShardedUnit::ShardedUnit(const std::vector<nn::Parameter*>& params,
                         std::shared_ptr<Communicator> comm)
    : comm_(std::move(comm)), flat_(params, comm_->size()), shard_(take_shard(flat_, *comm_)) {
  // Gradients are bound only while a backward pass needs them.
  flat_.bind_grads(Tensor());
}

void ShardedUnit::start_gather() {
  if (flat_.values().defined() || gathering_) return;
  incoming_ = Tensor::empty({flat_.padded_numel()}, DType::kF32, flat_.device());
  gathering_ = comm_->all_gather(shard_.value, incoming_);
}

void ShardedUnit::gather() {
  start_gather();
  if (!gathering_) return;
  gathering_->wait();
  gathering_.reset();
  flat_.bind_values(std::move(incoming_));
  incoming_ = Tensor();
}

WorkPtr ShardedUnit::refresh() {
  COURSE_CHECK(gathered(), "refreshing the full values of a unit that does not hold them");
  return comm_->all_gather(shard_.value, flat_.values());
}

void ShardedUnit::release() {
  COURSE_CHECK(!gathering_, "releasing a unit whose gather is still in flight");
  flat_.bind_values(Tensor());
}

void ShardedUnit::allocate_gradients() {
  if (!has_gradients()) flat_.bind_grads(zeros_on(flat_.padded_numel(), flat_.device()));
}

void ShardedUnit::reduce_gradients(bool keep) {
  COURSE_CHECK(has_gradients(), "reducing the gradients of a unit that has none bound");
  COURSE_CHECK(!reducing_, "a unit's gradients reduced twice in one backward pass");
  reduced_ = Tensor::empty({shard_range().size()}, DType::kF32, flat_.device());
  reducing_ = comm_->reduce_scatter(flat_.grads(), reduced_);
  keep_gradients_ = keep;
}

void ShardedUnit::finish_reduction() {
  if (!reducing_) return;
  reducing_->wait();
  reducing_.reset();
  axpy_(1.0f / static_cast<float>(comm_->size()), reduced_, shard_.grad);
  reduced_ = Tensor();
  if (!keep_gradients_) flat_.bind_grads(Tensor());
}

void ShardedUnit::zero_grad() {
  fill_(shard_.grad, 0.0);
  if (has_gradients()) fill_(flat_.grads(), 0.0);
}

}  // namespace course::parallel
