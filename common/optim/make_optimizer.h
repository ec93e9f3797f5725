// The optimizers by name, as the labs' --optimizer flag takes them: the course's SGD with
// momentum and the large-batch and adaptive ones (AdamW, LARS, LAMB, Lion), with the flags'
// learning rate, momentum and weight decay (each optimizer's own defaults for the rest).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/optim/optimizer.h"

namespace course::optim {

struct OptimizerFlags {
  std::string name = "sgd";  // one of optimizer_names()
  float lr = 0.1f;
  float momentum = 0.9f;  // SGD and LARS
  float weight_decay = 0.0f;
};

const std::vector<std::string>& optimizer_names();

// Throws course::Error for an unknown name.
std::unique_ptr<Optimizer> make_optimizer(
    const OptimizerFlags& flags, std::vector<std::pair<std::string, nn::Parameter*>> params);

}  // namespace course::optim
