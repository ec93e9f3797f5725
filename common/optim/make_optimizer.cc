// Optimizers by name.
#include "common/optim/make_optimizer.h"

#include "common/optim/large_batch.h"
#include "common/optim/lion.h"

namespace course::optim {

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {"sgd", "adamw", "lars", "lamb", "lion"};
  return names;
}

namespace {

// AdamW's and LAMB's options share their fields and differ in their defaults.
template <class Options>
Options adam_like_options(const OptimizerFlags& f) {
  Options o{.lr = f.lr, .weight_decay = f.weight_decay};
  o.beta1 = f.beta1.value_or(o.beta1);
  o.beta2 = f.beta2.value_or(o.beta2);
  o.eps = f.eps.value_or(o.eps);
  return o;
}

}  // namespace

AdamWOptions adamw_options(const OptimizerFlags& f) { return adam_like_options<AdamWOptions>(f); }
LambOptions lamb_options(const OptimizerFlags& f) { return adam_like_options<LambOptions>(f); }

std::unique_ptr<Optimizer> make_optimizer(
    const OptimizerFlags& f, std::vector<std::pair<std::string, nn::Parameter*>> params) {
  if (f.name == "sgd") {
    return std::make_unique<Sgd>(
        params, SgdOptions{.lr = f.lr, .momentum = f.momentum, .weight_decay = f.weight_decay});
  }
  if (f.name == "adamw") {
    return std::make_unique<AdamW>(params, adamw_options(f));
  }
  if (f.name == "lars") {
    return std::make_unique<Lars>(
        params, LarsOptions{.lr = f.lr, .momentum = f.momentum, .weight_decay = f.weight_decay});
  }
  if (f.name == "lamb") {
    return std::make_unique<Lamb>(params, lamb_options(f));
  }
  if (f.name == "lion") {
    LionOptions o{.lr = f.lr, .weight_decay = f.weight_decay};
    o.beta1 = f.beta1.value_or(o.beta1);
    o.beta2 = f.beta2.value_or(o.beta2);
    return std::make_unique<Lion>(params, o);
  }
  COURSE_FAIL("unknown optimizer '", f.name, "' (sgd, adamw, lars, lamb or lion)");
}

}  // namespace course::optim
