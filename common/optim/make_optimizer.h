// The optimizers by name, as the labs' --optimizer flag takes them: the course's SGD with
// momentum and the large-batch and adaptive ones (AdamW, LARS, LAMB, Lion), with the flags'
// learning rate, momentum, weight decay, betas and epsilon (each optimizer's own defaults for
// the rest).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/optim/large_batch.h"
#include "common/optim/optimizer.h"

namespace course::optim {

struct OptimizerFlags {
  std::string name = "sgd";  // one of optimizer_names()
  float lr = 0.1f;
  float momentum = 0.9f;  // SGD and LARS
  float weight_decay = 0.0f;
  // The moments' decay rates and Adam's epsilon (AdamW, LAMB, Lion's betas; unset: each
  // optimizer's default).
  std::optional<float> beta1, beta2, eps;
  // The 1-bit optimizers' warm-up (common/parallel/onebit_optimizer.h; unset: 100 steps).
  std::optional<int64_t> freeze_step;
};

const std::vector<std::string>& optimizer_names();

// The flags' options of AdamW and LAMB (the 1-bit optimizers' warm-up takes them too).
AdamWOptions adamw_options(const OptimizerFlags& flags);
LambOptions lamb_options(const OptimizerFlags& flags);

// Throws course::Error for an unknown name.
std::unique_ptr<Optimizer> make_optimizer(
    const OptimizerFlags& flags, std::vector<std::pair<std::string, nn::Parameter*>> params);

}  // namespace course::optim
