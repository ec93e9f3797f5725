// 1-bit Adam and 1-bit LAMB: the warm-up through optim::AdamW / optim::Lamb, then the compressed
// stage on the flat moments.
#include "common/parallel/data_parallel/onebit_optimizer.h"

#include "common/kernels/elementwise.h"
#include "common/kernels/optimizer_kernels.h"
#include "common/optim/large_batch.h"

namespace course::parallel {

namespace {

std::vector<int64_t> tensor_sizes(
    const std::vector<std::pair<std::string, nn::Parameter*>>& params) {
  std::vector<int64_t> sizes;
  for (const auto& [name, p] : params) sizes.push_back(p->value.numel());
  return sizes;
}

Device device_of(const std::vector<std::pair<std::string, nn::Parameter*>>& params) {
  COURSE_CHECK(!params.empty(), "a 1-bit optimizer needs parameters");
  return params.front().second->value.device();
}

std::unique_ptr<optim::Optimizer> warmup_optimizer(
    const std::vector<std::pair<std::string, nn::Parameter*>>& params, const OneBitOptions& o) {
  const auto options = [&o](auto base) {
    base.lr = o.lr;
    base.beta1 = o.beta1;
    base.beta2 = o.beta2;
    base.eps = o.eps;
    base.weight_decay = o.weight_decay;
    return base;
  };
  if (o.base == OneBitBase::kLamb) {
    return std::make_unique<optim::Lamb>(params, options(optim::LambOptions{}));
  }
  optim::AdamWOptions adam = options(optim::AdamWOptions{});
  adam.bias_correction = false;  // DeepSpeed's OnebitAdam: exp_avg / (sqrt(exp_avg_sq) + eps)
  return std::make_unique<optim::AdamW>(params, adam);
}

}  // namespace

OneBitOptimizer::OneBitOptimizer(std::vector<std::pair<std::string, nn::Parameter*>> params,
                                 const OneBitOptions& options, std::shared_ptr<Communicator> comm)
    : Optimizer(params, options.lr),
      options_(options),
      ranks_(comm->size()),
      warmup_(warmup_optimizer(params, options)),
      allreduce_(tensor_sizes(params), std::move(comm), device_of(params)) {
  COURSE_CHECK(options.freeze_step >= 1,
               "1-bit optimizers freeze the variance of their warm-up, which needs at least one "
               "step (freeze_step ",
               options.freeze_step, ")");
  const Device device = device_of(params_);
  momentum_ = zeros({allreduce_.padded_numel()}, DType::kF32, device);
  variance_ = zeros({allreduce_.padded_numel()}, DType::kF32, device);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& value = params_[i].second->value;
    const int64_t at = allreduce_.offset(i);
    momentum_of_.push_back(momentum_.slice(at, at + value.numel()).view(value.shape()));
    variance_of_.push_back(variance_.slice(at, at + value.numel()).view(value.shape()));
  }
  // The warm-up optimizer's moments become the slices: its steps then fill the flat buffers.
  size_t param = 0;
  for (auto& [name, t] : warmup_->state_tensors()) {
    const bool first = name.ends_with(".exp_avg");
    COURSE_CHECK(first || name.ends_with(".exp_avg_sq"), "unexpected state ", name);
    *t = first ? momentum_of_[param] : variance_of_[param];
    if (!first) ++param;
  }
  if (options.base == OneBitBase::kLamb) {
    for (const auto& [name, p] : params_) moved_.push_back(p->value.clone());
    frozen_trust_ = zeros({static_cast<int64_t>(params_.size())}, DType::kF32, device);
    frozen_trust_slots_ = optim::scalar_slots_of(frozen_trust_);
  }
}

std::vector<std::pair<std::string, Tensor*>> OneBitOptimizer::state_tensors() {
  std::vector<std::pair<std::string, Tensor*>> state = warmup_->state_tensors();
  if (frozen_trust_.defined()) state.emplace_back("onebit.frozen_trust", &frozen_trust_);
  state.emplace_back("onebit.worker_error", &allreduce_.worker_error());
  state.emplace_back("onebit.server_error", &allreduce_.server_error());
  return state;
}

// The compressed stage's scalars: 1-bit Adam's {lr, 1, 1} (DeepSpeed's, without bias
// correction); 1-bit LAMB's AdamW scalars at step t with the variance's bias correction frozen
// at freeze_step, its update at lr 1 and lr read after them.
std::vector<float> OneBitOptimizer::step_scalars() const {
  if (options_.base == OneBitBase::kAdam) return {lr_, 1.0f, 1.0f};
  std::vector<float> scalars = adamw_step_scalars(1.0f, hyper(), steps_ + 1);
  scalars[2] = adamw_step_scalars(1.0f, hyper(), options_.freeze_step)[2];
  scalars.push_back(lr_);
  return scalars;
}

AdamWHyper OneBitOptimizer::hyper() const {
  return {options_.beta1, options_.beta2, options_.eps, options_.weight_decay};
}

void OneBitOptimizer::apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                                   UpdateTable&) {
  COURSE_CHECK(indices.size() == params_.size(),
               "1-bit optimizers update every parameter at once (their momentum travels whole): "
               "they do not run in the backward pass");
  if (!compressed()) {
    warmup_->set_lr(lr_);
    warmup_->set_steps(steps_);
    warmup_->prepare_step();
    warmup_->update(skip_if);
    if (steps_ + 1 == options_.freeze_step && frozen_trust_.defined()) {
      copy_(frozen_trust_, static_cast<const optim::Lamb&>(*warmup_).trust_ratios());
    }
    return;
  }
  COURSE_CHECK(!skip_if.defined(),
               "1-bit optimizers cannot skip an overflowed step (their momentum has travelled "
               "by then): train in bf16 or f32");
  compressed_update();
}

void OneBitOptimizer::compressed_update() {
  std::vector<UpdateSlots> momentum_slots, update_slots;
  for (size_t i = 0; i < params_.size(); ++i) {
    nn::Parameter& p = *params_[i].second;
    momentum_slots.push_back({&momentum_of_[i], &p.grad});
    Tensor* moving = moved_.empty() ? &p.value : &moved_[i];
    if (!moved_.empty()) copy_(moved_[i], p.value);
    update_slots.push_back({moving, &momentum_of_[i], &variance_of_[i]});
  }
  momentum_update_(momentum_table_, momentum_slots, options_.beta1);
  allreduce_.average_(momentum_);
  frozen_variance_update_(frozen_table_, update_slots, hyper(), step_scalars_.slice(0, 3));
  if (moved_.empty()) return;
  // 1-bit LAMB: each parameter along its direction at its frozen trust ratio, in one launch.
  std::vector<UpdateSlots> step_slots;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& w = params_[i].second->value;
    axpy_(-1.0f, w, moved_[i]);  // the direction, negated
    step_slots.push_back({&w, &moved_[i], &frozen_trust_slots_[i]});
  }
  trust_step_(step_table_, step_slots, step_scalars_.slice(3, 4));
}

std::unique_ptr<optim::Optimizer> make_parallel_optimizer(
    const optim::OptimizerFlags& flags, std::vector<std::pair<std::string, nn::Parameter*>> params,
    std::shared_ptr<Communicator> comm, const KeepGradientsLocal& keep_local) {
  if (!optim::is_onebit(flags.kind)) return optim::make_optimizer(flags, std::move(params));
  const bool adam = flags.kind == optim::OptimizerKind::kOneBitAdam;
  COURSE_CHECK(comm != nullptr, "--optimizer ", optim::optimizer_name(flags.kind),
               " averages its momentum over the ranks of a job: run the lab itself (one process, "
               "mpirun or srun)");
  const auto onebit_options = [&](const auto& base) {
    return OneBitOptions{.base = adam ? OneBitBase::kAdam : OneBitBase::kLamb,
                         .lr = base.lr,
                         .beta1 = base.beta1,
                         .beta2 = base.beta2,
                         .eps = base.eps,
                         .weight_decay = base.weight_decay,
                         .freeze_step = flags.freeze_step.value_or(100)};
  };
  auto optimizer =
      std::make_unique<OneBitOptimizer>(std::move(params),
                                        adam ? onebit_options(optim::adamw_options(flags))
                                             : onebit_options(optim::lamb_options(flags)),
                                        std::move(comm));
  const OneBitOptimizer* onebit = optimizer.get();
  keep_local([onebit] { return onebit->compressed(); });
  return optimizer;
}

}  // namespace course::parallel
