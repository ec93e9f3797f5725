// The optimizers the labs' --optimizer flag names, as one kind parsed once by the flag parser:
// the course's SGD with momentum, the large-batch and adaptive ones (AdamW, LARS, LAMB, Lion)
// and the 1-bit ones over data-parallel ranks (common/parallel/data_parallel/onebit_optimizer.h).
// What the rest of the course asks of an optimizer (its state per parameter, its flags, whether
// a shard can be updated alone) is asked of its kind here, never of its name. make_optimizer
// builds one with the flags' learning rate, momentum, weight decay, betas and epsilon (each
// optimizer's own defaults for the rest).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/kernels/device_factor.h"
#include "common/optim/large_batch.h"
#include "common/optim/optimizer.h"

namespace course::optim {

enum class OptimizerKind { kSgd, kAdamW, kLars, kLamb, kLion, kOneBitAdam, kOneBitLamb };

// The flag's spelling of a kind ("sgd", "adamw", "lars", "lamb", "lion", "onebit-adam",
// "onebit-lamb").
const char* optimizer_name(OptimizerKind kind);
// The flag's choices: the single-process ones, and the 1-bit ones where `with_onebit` (labs that
// train over data-parallel ranks).
std::vector<std::pair<std::string, OptimizerKind>> optimizer_choices(bool with_onebit);

// 1-bit Adam or 1-bit LAMB: the momentum averaged over the ranks as signs after a warm-up.
bool is_onebit(OptimizerKind kind);
// Whether the optimizer has Adam's moment decays (--beta1, --beta2): AdamW, LAMB, Lion, 1-bit.
bool has_betas(OptimizerKind kind);
// Whether it has Adam's epsilon (--eps): AdamW, LAMB, 1-bit (Lion takes signs, not ratios).
bool has_eps(OptimizerKind kind);
// Whether each element's update needs only that element's values (SGD, AdamW, Lion), so a rank
// can update its shard of a flat parameter alone; LARS's and LAMB's trust ratios span whole
// parameters.
bool updates_elementwise(OptimizerKind kind);
// The tensors of the parameter's size the optimizer keeps: SGD's, LARS's and Lion's momentum,
// AdamW's and LAMB's two moments, and the 1-bit ones' compression error on top (1-bit
// LAMB's fresh variance too).
int state_tensors_per_parameter(OptimizerKind kind);

struct OptimizerFlags {
  OptimizerKind kind = OptimizerKind::kSgd;
  float lr = 0.1f;
  float momentum = 0.9f;  // SGD and LARS
  float weight_decay = 0.0f;
  // The moments' decay rates and Adam's epsilon (AdamW, LAMB, Lion's betas; unset: each
  // optimizer's default).
  std::optional<float> beta1, beta2, eps;
  // The 1-bit optimizers' warm-up (common/parallel/data_parallel/onebit_optimizer.h; unset: 100
  // steps).
  std::optional<int64_t> freeze_step;
  // DeepSpeed's exp_avg_mask, made at the freeze from the variance's exact zeros, and 1-bit
  // LAMB's coefficient clamps and factor (its max_coeff ... factor_threshold).
  bool exp_avg_mask = false;
  OneBitLambCoefficients onebit_lamb;
  // The 1-bit workers' compression of one tensor (values, error) into what they send (unset:
  // the library's kernel; set: TP4.22's onebit_compress).
  std::function<Tensor(const Tensor&, Tensor&)> onebit_worker;
};

// The flags' options of AdamW and LAMB (the 1-bit optimizers' warm-up takes them too).
AdamWOptions adamw_options(const OptimizerFlags& flags);
LambOptions lamb_options(const OptimizerFlags& flags);

// Any kind but the 1-bit ones, which need the data-parallel ranks (make_parallel_optimizer).
std::unique_ptr<Optimizer> make_optimizer(
    const OptimizerFlags& flags, std::vector<std::pair<std::string, nn::Parameter*>> params);

}  // namespace course::optim
