// Wrapping the blocks, the root unit, and the step's collective bookkeeping.
#include "common/parallel/data_parallel/sharded_data_parallel.h"

#include <set>

#include "common/optim/gradient_clipping.h"
#include "common/parallel/data_parallel/gradient_average.h"

namespace course::parallel {

namespace {

// The parameters of `model` outside the blocks: the root's.
std::vector<nn::Parameter*> root_parameters(nn::Module& model, nn::Sequential& blocks) {
  std::set<const nn::Parameter*> in_blocks;
  for (const nn::Module::Child& child : blocks.children()) {
    for (const nn::Parameter* p : child.module->parameters()) in_blocks.insert(p);
  }
  std::vector<nn::Parameter*> rest;
  for (nn::Parameter* p : model.parameters()) {
    if (!in_blocks.count(p)) rest.push_back(p);
  }
  return rest;
}

}  // namespace

ShardingUnits sharding_units(nn::Module& model, nn::Sequential& blocks,
                             int64_t persistence_threshold) {
  ShardingUnits units;
  const auto add = [&](const std::string& name, const std::vector<nn::Parameter*>& params) {
    auto [released, persistent] = split_at_persistence(params, persistence_threshold);
    if (!released.empty()) units.emplace_back(name, std::move(released));
    if (!persistent.empty()) units.emplace_back(name + kPersistentSuffix, std::move(persistent));
  };
  add("root", root_parameters(model, blocks));
  for (const nn::Module::Child& child : blocks.children()) {
    add(child.name, child.module->parameters());
  }
  return units;
}

ShardedDataParallel::ShardedDataParallel(nn::Module& model, nn::Sequential& blocks,
                                         std::shared_ptr<Communicator> comm,
                                         const ShardingOptions& options)
    : model_(model),
      groups_(make_shard_groups(
          comm, parallel::shard_group_size(options, comm->size(), comm->local_size()))),
      policy_(policy_of(options.sharding)),
      reductions_(options.communication, policy_.keep_full_gradients),
      allgather_bucket_elements_(options.communication.allgather_bucket_elements),
      persistence_threshold_(options.communication.persistence_threshold) {
  blocks.wrap_children([&](nn::ModulePtr block) -> nn::ModulePtr {
    if (block->parameters().empty()) return block;
    return std::make_unique<ShardedBlock>(std::move(block), groups_, options);
  });
  for (const nn::Module::Child& child : blocks.children()) {
    if (auto* block = dynamic_cast<ShardedBlock*>(child.module))
      blocks_.emplace_back(child.name, block);
  }
  const std::vector<nn::Parameter*> rest = root_parameters(model_, blocks);
  if (!rest.empty()) {
    root_ = std::make_unique<ShardedGroup>(rest, groups_, options);
    if (policy_.keep_full_gradients) root_->allocate_gradients();
  }
  link_blocks(options.communication);
  // Between steps a unit holds what its strategy keeps: zero3 and shard-grad-op only shards.
  if (policy_.reshard_after_backward) release_all();
}

void ShardedDataParallel::link_blocks(const ZeroCommunication& communication) {
  if (const std::optional<PrefetchBudget> budget = stage3_budget(communication)) {
    std::vector<ShardedUnit*> in_order;
    for (auto& [name, block] : blocks_) in_order.push_back(block->units().released());
    stage3_ = std::make_unique<Stage3Prefetch>(*budget, in_order, units());
  }
  for (size_t i = 0; i < blocks_.size(); ++i) {
    blocks_[i].second->set_neighbours(
        {.previous = i > 0 ? blocks_[i - 1].second : nullptr,
         .next = i + 1 < blocks_.size() ? blocks_[i + 1].second : nullptr,
         .reductions = &reductions_,
         .stage3 = stage3_.get(),
         .index = i});
  }
}

std::vector<std::pair<std::string, ShardedUnit*>> ShardedDataParallel::named_units() {
  std::vector<std::pair<std::string, ShardedUnit*>> out;
  if (root_) out = root_->named_units("root");
  for (auto& [name, block] : blocks_) {
    for (const auto& named : block->units().named_units(name)) out.push_back(named);
  }
  return out;
}

std::vector<ShardedUnit*> ShardedDataParallel::units() {
  std::vector<ShardedUnit*> out;
  for (const auto& [name, unit] : named_units()) out.push_back(unit);
  return out;
}

std::vector<ShardedGroup*> ShardedDataParallel::groups() {
  std::vector<ShardedGroup*> out;
  if (root_) out.push_back(root_.get());
  for (auto& [name, block] : blocks_) out.push_back(&block->units());
  return out;
}

std::vector<ShardedUnit*> ShardedDataParallel::units_gathered_between_steps() {
  std::vector<ShardedUnit*> out;
  for (ShardedGroup* group : groups()) {
    if (group->released() && !policy_.reshard_after_backward) out.push_back(group->released());
    if (group->persistent()) out.push_back(group->persistent());
  }
  return out;
}

std::vector<std::pair<std::string, nn::Parameter*>> ShardedDataParallel::shard_parameters() {
  std::vector<std::pair<std::string, nn::Parameter*>> out;
  for (const auto& [name, unit] : named_units()) out.emplace_back(name + ".shard", &unit->shard());
  return out;
}

void ShardedDataParallel::zero_grad() {
  for (ShardedUnit* unit : units()) unit->zero_grad();
}

void ShardedDataParallel::after_step() {
  // DeepSpeed's allgather_bucket_size: a unit's gather waits for those in flight once they hold
  // that many elements (0: none waits).
  std::vector<ShardedUnit*> in_flight;
  int64_t in_flight_elements = 0;
  for (ShardedUnit* unit : units_gathered_between_steps()) {
    if (allgather_bucket_elements_ > 0 && !in_flight.empty() &&
        in_flight_elements + unit->padded_numel() > allgather_bucket_elements_) {
      for (ShardedUnit* gathering : in_flight) gathering->finish_refresh();
      in_flight.clear();
      in_flight_elements = 0;
    }
    unit->start_refresh();
    in_flight.push_back(unit);
    in_flight_elements += unit->padded_numel();
  }
  for (ShardedUnit* unit : in_flight) unit->finish_refresh();
}

void ShardedDataParallel::gather_all() {
  for (ShardedUnit* unit : units()) unit->start_gather();
  for (ShardedUnit* unit : units()) unit->gather();
}

Tensor ShardedDataParallel::squared_gradient_norm() {
  std::vector<nn::Parameter*> shards;
  for (const auto& named : shard_parameters()) shards.push_back(named.second);
  return sum_over_ranks(optim::squared_gradient_sum(shards), *groups_.shard);
}

double ShardedDataParallel::bytes_sent() const {
  double bytes = groups_.world->traffic().bytes;
  if (groups_.shard != groups_.world) bytes += groups_.shard->traffic().bytes;
  return bytes + groups_.replicate->traffic().bytes;
}

double ShardedDataParallel::waited_seconds() {
  double total = 0;
  for (ShardedUnit* unit : units()) total += unit->waited_seconds();
  return total;
}

void ShardedDataParallel::release_all() {
  for (ShardedGroup* group : groups()) group->release();
}

Tensor ShardedDataParallel::run_forward(const Tensor& x, nn::Context& ctx) {
  if (root_) root_->gather();
  return model_.forward(x, ctx.child(0));
}

Tensor ShardedDataParallel::run_backward(const Tensor& dy, nn::Context& ctx) {
  if (root_) root_->allocate_gradients();
  Tensor dx = model_.backward(dy, ctx.child_fed_input(0));
  if (root_) root_->reduce_in(reductions_);
  reductions_.finish();
  if (root_ && policy_.reshard_after_backward) root_->release();
  return dx;
}

}  // namespace course::parallel
