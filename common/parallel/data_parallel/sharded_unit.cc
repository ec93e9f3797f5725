// Gathering, releasing and reducing one flat parameter's shards.
#include "common/parallel/data_parallel/sharded_unit.h"

#include "common/kernels/elementwise.h"

namespace course::parallel {

namespace {

Tensor zeros_on(int64_t numel, Device device) { return zeros({numel}, DType::kF32, device); }

// Rank 0's values broadcast, then this rank's part of them copied out with a zero gradient.
// Offloaded, in host memory.
nn::Parameter take_shard(nn::FlatParameters& flat, const ShardGroups& groups, bool offload) {
  groups.world->broadcast(flat.values(), 0)->wait();
  const nn::FlatRange mine = flat.shard(groups.shard->rank());
  const Tensor values = flat.values().slice(mine.begin, mine.end);
  const Device home = offload ? Device::cpu() : flat.device();
  return nn::Parameter(offload ? values.to(home) : values.clone(), zeros_on(mine.size(), home));
}

}  // namespace

ShardGroups make_shard_groups(std::shared_ptr<Communicator> world, int shard_size) {
  const int n = world->size(), r = world->rank();
  COURSE_CHECK(shard_size >= 1 && n % shard_size == 0, "the world's ", n,
               " ranks do not split into shard groups of ", shard_size);
  ShardGroups groups{.world = world};
  groups.shard = shard_size == n ? world : world->split(r / shard_size, r);
  groups.replicate = world->split(r % shard_size, r);
  return groups;
}

ShardedUnit::ShardedUnit(const std::vector<nn::Parameter*>& params, ShardGroups groups,
                         bool offload, DType param_dtype)
    : groups_(std::move(groups)),
      flat_(params, groups_.shard->size()),
      offload_(offload),
      param_dtype_(param_dtype),
      shard_(take_shard(flat_, groups_, offload)),
      waits_(flat_.values().device()) {
  COURSE_CHECK(is_floating(param_dtype), "sharded parameters compute in f32, f16 or bf16, not ",
               dtype_name(param_dtype));
  // The full values are what a gather would give: rank 0's, in the parameter dtype.
  if (param_dtype != DType::kF32) flat_.bind_values(cast(flat_.values(), param_dtype));
  // Gradients are bound only while a backward pass needs them.
  flat_.bind_grads(Tensor());
}

void ShardedUnit::start_gather() {
  if (flat_.values().defined() || gathering_) return;
  incoming_ = Tensor::empty({flat_.padded_numel()}, param_dtype_, flat_.device());
  gathering_ = groups_.shard->all_gather(outgoing_shard(), incoming_);
}

void ShardedUnit::gather() {
  start_gather();
  if (!gathering_) return;
  wait_for(*gathering_);
  gathering_.reset();
  outgoing_ = Tensor();
  flat_.bind_values(std::move(incoming_));
  incoming_ = Tensor();
}

const Tensor& ShardedUnit::outgoing_shard() {
  if (!offload_ && param_dtype_ == DType::kF32) return shard_.value;
  // Cast where the shard lives: an offloaded 16-bit shard crosses to the device at half the size.
  Tensor sent = param_dtype_ == DType::kF32 ? shard_.value : cast(shard_.value, param_dtype_);
  outgoing_ = offload_ ? sent.to(flat_.device()) : std::move(sent);
  return outgoing_;
}

void ShardedUnit::start_refresh() {
  COURSE_CHECK(gathered() && !refreshing_,
               "refreshing the full values of a unit that does not hold them");
  refreshing_ = groups_.shard->all_gather(outgoing_shard(), flat_.values());
}

void ShardedUnit::finish_refresh() {
  if (!refreshing_) return;
  wait_for(*refreshing_);
  refreshing_.reset();
  outgoing_ = Tensor();
}

void ShardedUnit::release() {
  COURSE_CHECK(!gathering_, "releasing a unit whose gather is still in flight");
  flat_.bind_values(Tensor());
}

void ShardedUnit::allocate_gradients() {
  if (!has_gradients()) flat_.bind_grads(zeros_on(flat_.padded_numel(), flat_.device()));
}

void ShardedUnit::reduce_gradients(bool keep, GradientReduction how) {
  COURSE_CHECK(has_gradients(), "reducing the gradients of a unit that has none bound");
  COURSE_CHECK(!reducing_, "a unit's gradients reduced twice in one backward pass");
  reduced_whole_ = how == GradientReduction::kAllReduce;
  if (reduced_whole_) {
    // In place, unless ZeRO-1 keeps the full gradients: they must stay this rank's own.
    reduced_ = keep ? flat_.grads().clone() : flat_.grads();
    reducing_ = groups_.shard->allreduce(reduced_);
  } else {
    reduced_ = Tensor::empty({shard_range().size()}, DType::kF32, flat_.device());
    reducing_ = groups_.shard->reduce_scatter(flat_.grads(), reduced_);
  }
  keep_gradients_ = keep;
}

void ShardedUnit::finish_reduction() {
  if (!reducing_) return;
  wait_for(*reducing_);
  reducing_.reset();
  if (reduced_whole_) {
    const nn::FlatRange mine = shard_range();
    reduced_ = reduced_.slice(mine.begin, mine.end);
  }
  // The replicas' sums of this shard (HYBRID_SHARD, NO_SHARD) add up to the world's.
  if (groups_.replicate && groups_.replicate->size() > 1) {
    wait_for(*groups_.replicate->allreduce(reduced_));
  }
  const Tensor reduced = offload_ ? reduced_.to(Device::cpu()) : reduced_;
  axpy_(1.0f / static_cast<float>(groups_.world->size()), reduced, shard_.grad);
  reduced_ = Tensor();
  if (!keep_gradients_) flat_.bind_grads(Tensor());
}

void ShardedUnit::wait_for(Work& work) {
  waits_.start();
  work.wait();
  waits_.stop();
}

void ShardedUnit::zero_grad() {
  fill_(shard_.grad, 0.0);
  if (has_gradients()) fill_(flat_.grads(), 0.0);
}

}  // namespace course::parallel
