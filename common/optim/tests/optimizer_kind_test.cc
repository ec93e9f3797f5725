// Optimizer kinds (make_optimizer.h): the --optimizer flag's names, and each kind's traits against
// what its optimizer does.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/kernels/elementwise.h"
#include "common/optim/make_optimizer.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/random_tensor.h"

namespace course::optim {
namespace {

// An optimizer of `flags.kind` over a parameter of 5 and one of 40,001 elements (signed random
// starts), after three steps of signed random gradients: the parameters' values and the number
// of state elements it keeps. With `halved` the second parameter is given to the optimizer as
// two parameters of 20,000 and 20,001 elements (two ranks' shards), the same values and
// gradients, and its values come back joined.
struct KindRun {
  std::vector<std::vector<float>> values;
  int64_t state_elements = 0;
};

KindRun run_kind(const OptimizerFlags& flags, bool halved) {
  const std::vector<int64_t> sizes = {5, 40001};
  std::vector<Tensor> starts;
  for (size_t i = 0; i < sizes.size(); ++i) {
    starts.push_back(testing::random_tensor({sizes[i]}, DType::kF32, Device::cpu(), 7 + i).tensor);
  }
  std::vector<std::pair<int64_t, int64_t>> pieces = {{0, 5}, {0, 40001}};  // (start, end) of each
  std::vector<size_t> source = {0, 1};
  if (halved) {
    pieces = {{0, 5}, {0, 20000}, {20000, 40001}};
    source = {0, 1, 1};
  }
  std::vector<std::unique_ptr<nn::Parameter>> params;
  std::vector<std::pair<std::string, nn::Parameter*>> list;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Tensor piece = starts[source[i]].slice(pieces[i].first, pieces[i].second).clone();
    params.push_back(std::make_unique<nn::Parameter>(piece));
    list.emplace_back("p" + std::to_string(i), params.back().get());
  }
  const auto optimizer = course::optim::make_optimizer(flags, list);
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < pieces.size(); ++i) {
      const Tensor grad = testing::random_tensor({sizes[source[i]]}, DType::kF32, Device::cpu(),
                                                 100 + 11 * step + source[i])
                              .tensor;
      copy_(params[i]->grad, grad.slice(pieces[i].first, pieces[i].second));
    }
    optimizer->step();
  }
  KindRun run;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::vector<float> values = params[i]->value.to_vector<float>();
    if (i > 0 && source[i] == source[i - 1]) {
      run.values.back().insert(run.values.back().end(), values.begin(), values.end());
    } else {
      run.values.push_back(values);
    }
  }
  for (const auto& [name, state] : optimizer->state_tensors()) run.state_elements += state->numel();
  return run;
}

TEST(OptimizerKinds, NamesRoundTripAndTheOneBitOnesOnlyWhereAsked) {
  const auto alone = optimizer_choices(false), over_ranks = optimizer_choices(true);
  EXPECT_EQ(alone.size(), 5u);
  EXPECT_EQ(over_ranks.size(), 7u);
  std::set<std::string> names;
  for (const auto& [name, kind] : over_ranks) {
    EXPECT_EQ(name, optimizer_name(kind));
    names.insert(name);
  }
  EXPECT_EQ(names.size(), over_ranks.size()) << "two kinds share a name";
  for (const auto& [name, kind] : alone) EXPECT_FALSE(is_onebit(kind)) << name;
  const std::string error = testing::error_of(
      [] { course::optim::make_optimizer({.kind = OptimizerKind::kOneBitLamb}, {}); });
  EXPECT_NE(error.find("make_parallel_optimizer"), std::string::npos) << error;
}

// The traits the labs and the memory estimate ask of a kind, against what each optimizer does:
// the state it keeps per parameter element (a parameter of 40,001 elements, so that scalars such
// as a step count cannot round up), whether --beta1, --beta2 and --eps change its updates, and
// whether a parameter updated in two halves (a rank's shard) moves as the whole one does.
TEST(OptimizerKinds, TraitsAreWhatTheOptimizersDo) {
  for (const auto& [name, kind] : optimizer_choices(false)) {
    const OptimizerFlags flags{.kind = kind, .lr = 0.01f, .weight_decay = 0.05f};
    const KindRun plain = run_kind(flags, false);
    EXPECT_EQ(plain.state_elements / 40006, state_tensors_per_parameter(kind)) << name;

    OptimizerFlags betas = flags;
    betas.beta1 = 0.5f;
    betas.beta2 = 0.6f;
    EXPECT_EQ(run_kind(betas, false).values != plain.values, has_betas(kind)) << name;
    OptimizerFlags eps = flags;
    eps.eps = 0.5f;
    EXPECT_EQ(run_kind(eps, false).values != plain.values, has_eps(kind)) << name;

    EXPECT_EQ(run_kind(flags, true).values == plain.values, updates_elementwise(kind)) << name;
  }
}

}  // namespace
}  // namespace course::optim
