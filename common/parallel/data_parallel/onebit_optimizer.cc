// The 1-bit optimizers' shared flat moments and masked compressed average, 1-bit Adam's warm-up
// through optim::AdamW and its compressed stage, and the labs' choice between the 1-bit ones.
#include "common/parallel/data_parallel/onebit_optimizer.h"

#include <numeric>

#include "common/kernels/elementwise.h"
#include "common/parallel/data_parallel/onebit_lamb.h"

namespace course::parallel {

namespace {

using NamedParameters = std::vector<std::pair<std::string, nn::Parameter*>>;

// The sizes the compressed all-reduce is made for: each tensor's, or their sum.
std::vector<int64_t> compressed_sizes(const NamedParameters& params, bool whole_model) {
  std::vector<int64_t> sizes;
  for (const auto& [name, p] : params) sizes.push_back(p->value.numel());
  if (!whole_model) return sizes;
  return {std::accumulate(sizes.begin(), sizes.end(), int64_t{0})};
}

Device device_of(const NamedParameters& params) {
  COURSE_CHECK(!params.empty(), "a 1-bit optimizer needs parameters");
  return params.front().second->value.device();
}

}  // namespace

OneBitOptimizer::OneBitOptimizer(NamedParameters params, const OneBitOptions& options,
                                 std::shared_ptr<Communicator> comm, Fusion fusion)
    : Optimizer(params, options.lr),
      options_(options),
      ranks_(comm->size()),
      allreduce_(compressed_sizes(params, fusion == Fusion::kWholeModel), std::move(comm),
                 device_of(params), options.worker_compression) {
  COURSE_CHECK(options.freeze_step >= 1,
               "1-bit optimizers freeze the variance of their warm-up, which needs at least one "
               "step (freeze_step ",
               options.freeze_step, ")");
  const Device device = device_of(params_);
  momentum_ = zeros({allreduce_.padded_numel()}, DType::kF32, device);
  variance_ = zeros({allreduce_.padded_numel()}, DType::kF32, device);
  int64_t at = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    offsets_.push_back(fusion == Fusion::kPerTensor ? allreduce_.offset(i) : at);
    at += params_[i].second->value.numel();
  }
  momentum_of_ = slices_of(momentum_);
  variance_of_ = slices_of(variance_);
}

std::vector<Tensor> OneBitOptimizer::slices_of(const Tensor& flat) const {
  std::vector<Tensor> slices;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& value = params_[i].second->value;
    slices.push_back(flat.slice(offsets_[i], offsets_[i] + value.numel()).view(value.shape()));
  }
  return slices;
}

std::vector<std::pair<std::string, Tensor*>> OneBitOptimizer::state_tensors() {
  std::vector<std::pair<std::string, Tensor*>> state =
      named_state({{".exp_avg", &momentum_of_}, {".exp_avg_sq", &variance_of_}});
  state.emplace_back("onebit.worker_error", &allreduce_.worker_error());
  state.emplace_back("onebit.server_error", &allreduce_.server_error());
  return state;
}

AdamWHyper OneBitOptimizer::hyper() const {
  return {options_.beta1, options_.beta2, options_.eps, options_.weight_decay};
}

void OneBitOptimizer::average_momentum_() {
  allreduce_.average_(momentum_);
  if (!options_.exp_avg_mask) return;
  // The variance is frozen from here on: the mask made once is the mask of every later step
  // (and of a resumed run, made again from the restored variance).
  if (!mask_.defined()) {
    mask_ = Tensor::empty({momentum_.numel()}, DType::kF32, momentum_.device());
    UpdateTable once;
    nonzero_mask_(once, {{&mask_, &variance_}});
  }
  multiply_(mask_table_, {{&momentum_, &mask_}});
}

OneBitAdam::OneBitAdam(NamedParameters params, const OneBitOptions& options,
                       std::shared_ptr<Communicator> comm)
    : OneBitOptimizer(params, options, std::move(comm), Fusion::kPerTensor) {
  // DeepSpeed's OnebitAdam: exp_avg / (sqrt(exp_avg_sq) + eps), no bias correction.
  warmup_ = std::make_unique<optim::AdamW>(params,
                                           optim::AdamWOptions{.lr = options.lr,
                                                               .beta1 = options.beta1,
                                                               .beta2 = options.beta2,
                                                               .eps = options.eps,
                                                               .weight_decay = options.weight_decay,
                                                               .bias_correction = false});
  // The warm-up optimizer's moments become the slices: its steps then fill the flat buffers.
  size_t param = 0;
  for (auto& [name, t] : warmup_->state_tensors()) {
    const bool first = name.ends_with(".exp_avg");
    COURSE_CHECK(first || name.ends_with(".exp_avg_sq"), "unexpected state ", name);
    *t = first ? momentum_of_[param] : variance_of_[param];
    if (!first) ++param;
  }
}

void OneBitAdam::apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                              UpdateTable&) {
  COURSE_CHECK(indices.size() == params_.size(),
               "1-bit optimizers update every parameter at once (their momentum travels whole): "
               "they do not run in the backward pass");
  COURSE_CHECK(!skip_if.defined(),
               "1-bit optimizers do not skip an overflowed step on the device (their momentum "
               "travels before the update): step(skip_if) reads the flag on the host");
  if (!compressed()) {
    warmup_->set_lr(lr_);
    warmup_->set_steps(steps_);
    warmup_->prepare_step();
    warmup_->update();
    return;
  }
  compressed_update();
}

void OneBitAdam::compressed_update() {
  std::vector<UpdateSlots> momentum_slots, update_slots;
  for (size_t i = 0; i < params_.size(); ++i) {
    nn::Parameter& p = *params_[i].second;
    momentum_slots.push_back({&momentum_of_[i], &p.grad});
    update_slots.push_back({&p.value, &momentum_of_[i], &variance_of_[i]});
  }
  momentum_update_(momentum_table_, momentum_slots, options_.beta1);
  average_momentum_();
  frozen_variance_update_(frozen_table_, update_slots, hyper(), step_scalars_);
}

std::unique_ptr<optim::Optimizer> make_parallel_optimizer(const optim::OptimizerFlags& flags,
                                                          NamedParameters params,
                                                          std::shared_ptr<Communicator> comm,
                                                          const KeepGradientsLocal& keep_local) {
  if (!optim::is_onebit(flags.kind)) return optim::make_optimizer(flags, std::move(params));
  const bool adam = flags.kind == optim::OptimizerKind::kOneBitAdam;
  COURSE_CHECK(comm != nullptr, "--optimizer ", optim::optimizer_name(flags.kind),
               " averages its momentum over the ranks of a job: run the lab itself (one process, "
               "mpirun or srun)");
  const auto onebit_options = [&](const auto& base) {
    return OneBitOptions{.lr = base.lr,
                         .beta1 = base.beta1,
                         .beta2 = base.beta2,
                         .eps = base.eps,
                         .weight_decay = base.weight_decay,
                         .freeze_step = flags.freeze_step.value_or(100),
                         .exp_avg_mask = flags.exp_avg_mask,
                         .lamb = flags.onebit_lamb,
                         .worker_compression = flags.onebit_worker};
  };
  std::unique_ptr<OneBitOptimizer> optimizer;
  if (adam) {
    optimizer = std::make_unique<OneBitAdam>(
        std::move(params), onebit_options(optim::adamw_options(flags)), std::move(comm));
  } else {
    optimizer = std::make_unique<OneBitLamb>(
        std::move(params), onebit_options(optim::lamb_options(flags)), std::move(comm));
  }
  const OneBitOptimizer* onebit = optimizer.get();
  keep_local([onebit] { return onebit->compressed(); });
  return optimizer;
}

}  // namespace course::parallel
