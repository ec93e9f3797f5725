// Optimizer kinds: their names, their traits, and the optimizers they build.
#include "common/optim/make_optimizer.h"

#include "common/core/named_choices.h"
#include "common/optim/large_batch.h"
#include "common/optim/lion.h"

namespace course::optim {

const char* optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return "sgd";
    case OptimizerKind::kAdamW:
      return "adamw";
    case OptimizerKind::kLars:
      return "lars";
    case OptimizerKind::kLamb:
      return "lamb";
    case OptimizerKind::kLion:
      return "lion";
    case OptimizerKind::kOneBitAdam:
      return "onebit-adam";
    case OptimizerKind::kOneBitLamb:
      return "onebit-lamb";
  }
  COURSE_FAIL("optimizer kind ", static_cast<int>(kind), " has no name");
}

std::vector<std::pair<std::string, OptimizerKind>> optimizer_choices(bool with_onebit) {
  auto choices = named_choices(
      {OptimizerKind::kSgd, OptimizerKind::kAdamW, OptimizerKind::kLars, OptimizerKind::kLamb,
       OptimizerKind::kLion, OptimizerKind::kOneBitAdam, OptimizerKind::kOneBitLamb},
      optimizer_name);
  if (!with_onebit)
    std::erase_if(choices, [](const auto& choice) { return is_onebit(choice.second); });
  return choices;
}

bool is_onebit(OptimizerKind kind) {
  return kind == OptimizerKind::kOneBitAdam || kind == OptimizerKind::kOneBitLamb;
}

bool has_eps(OptimizerKind kind) {
  return kind == OptimizerKind::kAdamW || kind == OptimizerKind::kLamb || is_onebit(kind);
}

bool has_betas(OptimizerKind kind) { return has_eps(kind) || kind == OptimizerKind::kLion; }

bool updates_elementwise(OptimizerKind kind) {
  return kind == OptimizerKind::kSgd || kind == OptimizerKind::kAdamW ||
         kind == OptimizerKind::kLion;
}

int state_tensors_per_parameter(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
    case OptimizerKind::kLars:
    case OptimizerKind::kLion:
      return 1;
    case OptimizerKind::kAdamW:
    case OptimizerKind::kLamb:
      return 2;
    case OptimizerKind::kOneBitAdam:
      return 3;
    case OptimizerKind::kOneBitLamb:
      return 4;  // and the fresh variance of its factor
  }
  COURSE_FAIL("optimizer kind ", static_cast<int>(kind), " has no state figures");
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
  switch (f.kind) {
    case OptimizerKind::kSgd:
      return std::make_unique<Sgd>(
          params, SgdOptions{.lr = f.lr, .momentum = f.momentum, .weight_decay = f.weight_decay});
    case OptimizerKind::kAdamW:
      return std::make_unique<AdamW>(params, adamw_options(f));
    case OptimizerKind::kLars:
      return std::make_unique<Lars>(
          params, LarsOptions{.lr = f.lr, .momentum = f.momentum, .weight_decay = f.weight_decay});
    case OptimizerKind::kLamb:
      return std::make_unique<Lamb>(params, lamb_options(f));
    case OptimizerKind::kLion: {
      LionOptions o{.lr = f.lr, .weight_decay = f.weight_decay};
      o.beta1 = f.beta1.value_or(o.beta1);
      o.beta2 = f.beta2.value_or(o.beta2);
      return std::make_unique<Lion>(params, o);
    }
    case OptimizerKind::kOneBitAdam:
    case OptimizerKind::kOneBitLamb:
      break;
  }
  COURSE_FAIL("--optimizer ", optimizer_name(f.kind),
              " averages its momentum over data-parallel ranks: build it with "
              "parallel::make_parallel_optimizer");
}

}  // namespace course::optim
