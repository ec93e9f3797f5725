// Optimizers by name.
#include "common/optim/make_optimizer.h"

#include "common/optim/large_batch.h"
#include "common/optim/lion.h"

namespace course::optim {

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {"sgd", "adamw", "lars", "lamb", "lion"};
  return names;
}

std::unique_ptr<Optimizer> make_optimizer(
    const OptimizerFlags& f, std::vector<std::pair<std::string, nn::Parameter*>> params) {
  if (f.name == "sgd") {
    return std::make_unique<Sgd>(
        params, SgdOptions{.lr = f.lr, .momentum = f.momentum, .weight_decay = f.weight_decay});
  }
  if (f.name == "adamw") {
    return std::make_unique<AdamW>(params,
                                   AdamWOptions{.lr = f.lr, .weight_decay = f.weight_decay});
  }
  if (f.name == "lars") {
    return std::make_unique<Lars>(
        params, LarsOptions{.lr = f.lr, .momentum = f.momentum, .weight_decay = f.weight_decay});
  }
  if (f.name == "lamb") {
    return std::make_unique<Lamb>(params, LambOptions{.lr = f.lr, .weight_decay = f.weight_decay});
  }
  if (f.name == "lion") {
    return std::make_unique<Lion>(params, LionOptions{.lr = f.lr, .weight_decay = f.weight_decay});
  }
  COURSE_FAIL("unknown optimizer '", f.name, "' (sgd, adamw, lars, lamb or lion)");
}

}  // namespace course::optim
