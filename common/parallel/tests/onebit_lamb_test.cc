// 1-bit LAMB against DeepSpeed's OnebitLamb transcribed (deepspeed_onebit.h) on 2, 3 and 4 CPU
// ranks: tensors of uneven sizes through the warm-up and several compressed steps, with and
// without weight decay, with exp_avg_mask on rows that never receive a gradient; and a
// checkpoint of its state taken after the freeze that resumes bit for bit.
#include "common/parallel/data_parallel/onebit_lamb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "common/kernels/elementwise.h"
#include "common/parallel/tests/deepspeed_onebit.h"
#include "common/testing/world.h"

namespace course::parallel {
namespace {

using testing::world;
using Grads = std::vector<std::vector<std::vector<float>>>;  // [rank][tensor][element]

const std::vector<int64_t> kSizes = {1001, 7, 64, 333};
constexpr int64_t kFreeze = 3, kSteps = 7;

// Step `step`'s gradients of every rank; tensor 2's first 24 elements (its "unused rows")
// always 0 when `unused_rows`. In the warm-up every rank holds their mean, as after DDP.
Grads gradients_of(int step, bool unused_rows) {
  Grads grads(world()->size());
  for (int r = 0; r < world()->size(); ++r) {
    for (size_t t = 0; t < kSizes.size(); ++t) {
      std::vector<float> g = seeded_values(kSizes[t], r, 10 * step + static_cast<int>(t));
      if (unused_rows && t == 2) std::fill(g.begin(), g.begin() + 24, 0.0f);
      grads[r].push_back(g);
    }
  }
  if (step > kFreeze) return grads;
  for (size_t t = 0; t < kSizes.size(); ++t) {
    std::vector<float> mean(kSizes[t], 0.0f);
    for (const auto& rank : grads) {
      for (int64_t i = 0; i < kSizes[t]; ++i) mean[i] += rank[t][i] / world()->size();
    }
    for (auto& rank : grads) rank[t] = mean;
  }
  return grads;
}

struct LambSetup {
  float weight_decay;
  bool unused_rows;  // and exp_avg_mask
  float factor_max, factor_threshold;
};

DeepSpeedOnebitLamb::Hyper hyper_of(const LambSetup& s) {
  return {.lr = 0.02f,
          .beta1 = 0.9f,
          .beta2 = 0.6f,  // a variance that moves: the factor meets its clamps
          .eps = 1e-8f,
          .weight_decay = s.weight_decay,
          .freeze_step = kFreeze,
          .coeff_beta = 0.6f,  // 1 / (1 - coeff_beta) within the warm-up, as DeepSpeed advises
          .factor_max = s.factor_max,
          .factor_threshold = s.factor_threshold};
}

OneBitOptions options_of(const LambSetup& s) {
  const DeepSpeedOnebitLamb::Hyper h = hyper_of(s);
  OneBitOptions o{.lr = h.lr,
                  .beta1 = h.beta1,
                  .beta2 = h.beta2,
                  .eps = h.eps,
                  .weight_decay = h.weight_decay,
                  .freeze_step = kFreeze,
                  .exp_avg_mask = s.unused_rows};
  o.lamb.coeff_beta = h.coeff_beta;
  o.lamb.factor_max = h.factor_max;
  o.lamb.factor_threshold = h.factor_threshold;
  return o;
}

// The elements that never receive a gradient: seeded_values' zeros (every 11th from the 5th, on
// every rank and step) and tensor 2's unused rows.
std::vector<std::vector<float>> masks_of(const LambSetup& s) {
  if (!s.unused_rows) return {};
  std::vector<std::vector<float>> masks;
  for (const int64_t n : kSizes) {
    std::vector<float> mask(n, 1.0f);
    for (int64_t i = 4; i < n; i += 11) mask[i] = 0.0f;
    masks.push_back(mask);
  }
  std::fill(masks[2].begin(), masks[2].begin() + 24, 0.0f);
  return masks;
}

struct Model {
  std::vector<std::unique_ptr<nn::Parameter>> params;
  std::vector<std::pair<std::string, nn::Parameter*>> named() {
    std::vector<std::pair<std::string, nn::Parameter*>> out;
    for (size_t t = 0; t < params.size(); ++t)
      out.emplace_back("p" + std::to_string(t), &*params[t]);
    return out;
  }
};

Model make_model() {
  Model m;
  for (size_t t = 0; t < kSizes.size(); ++t) {
    m.params.push_back(std::make_unique<nn::Parameter>(
        Tensor::from_vector(seeded_values(kSizes[t], 0, 500 + static_cast<int>(t)), {kSizes[t]})));
  }
  return m;
}

void step_with(Model& m, OneBitLamb& optimizer, int step, bool unused_rows) {
  const Grads grads = gradients_of(step, unused_rows);
  for (size_t t = 0; t < kSizes.size(); ++t) {
    copy_(m.params[t]->grad, Tensor::from_vector(grads[world()->rank()][t], {kSizes[t]}));
  }
  optimizer.step();
}

void expect_as_deepspeed(const LambSetup& setup) {
  Model m = make_model();
  std::vector<std::vector<float>> initial;
  for (const auto& p : m.params) initial.push_back(p->value.to_vector<float>());
  DeepSpeedOnebitLamb deepspeed(initial, hyper_of(setup), world()->size(), masks_of(setup));
  OneBitLamb optimizer(m.named(), options_of(setup), world());
  for (int step = 1; step <= kSteps; ++step) {
    step_with(m, optimizer, step, setup.unused_rows);
    deepspeed.step(gradients_of(step, setup.unused_rows));
    for (size_t t = 0; t < kSizes.size(); ++t) {
      const std::vector<float> got = m.params[t]->value.to_vector<float>();
      const std::vector<float>& want = deepspeed.params()[t];
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 2e-5f * (1 + std::fabs(want[i])))
            << "step " << step << " tensor " << t << " element " << i;
      }
    }
  }
}

// A wide threshold: the factor is the denominators' ratio blended by the decay's share.
TEST(OneBitLamb, IsDeepSpeedsOnebitLambWithWeightDecay) {
  expect_as_deepspeed(
      {.weight_decay = 0.1f, .unused_rows = false, .factor_max = 4.0f, .factor_threshold = 0.9f});
}

// Without decay the factor is the denominators' ratio alone, held by the threshold, then by
// factor_max; the rows that never receive a
// gradient stay where they are only through exp_avg_mask (without it their compressed momentum
// over a variance of 0 throws them by lr x scale / eps).
TEST(OneBitLamb, IsDeepSpeedsOnebitLambWithTheMomentumMask) {
  expect_as_deepspeed(
      {.weight_decay = 0.0f, .unused_rows = true, .factor_max = 1.15f, .factor_threshold = 0.1f});
}

// The state after the freeze (moments, fresh variance, coefficients, factors, scalings, errors)
// restored into a new optimizer: its next steps are the uninterrupted run's, bit for bit.
TEST(OneBitLamb, StateAfterTheFreezeResumesBitForBit) {
  const LambSetup setup{
      .weight_decay = 0.1f, .unused_rows = true, .factor_max = 4.0f, .factor_threshold = 0.1f};
  Model whole = make_model(), resumed = make_model();
  OneBitLamb uninterrupted(whole.named(), options_of(setup), world());
  auto first = std::make_unique<OneBitLamb>(resumed.named(), options_of(setup), world());
  for (int step = 1; step <= kFreeze + 2; ++step) {
    step_with(whole, uninterrupted, step, true);
    step_with(resumed, *first, step, true);
  }
  OneBitLamb second(resumed.named(), options_of(setup), world());
  const auto from = first->state_tensors();
  const auto to = second.state_tensors();
  ASSERT_EQ(from.size(), to.size());
  for (size_t k = 0; k < from.size(); ++k) {
    ASSERT_EQ(from[k].first, to[k].first);
    copy_(*to[k].second, *from[k].second);
  }
  second.set_steps(first->steps());
  first.reset();
  for (int step = kFreeze + 3; step <= kSteps + 2; ++step) {
    step_with(whole, uninterrupted, step, true);
    step_with(resumed, second, step, true);
    for (size_t t = 0; t < kSizes.size(); ++t) {
      ASSERT_EQ(resumed.params[t]->value.to_vector<float>(),
                whole.params[t]->value.to_vector<float>())
          << "step " << step << " tensor " << t;
    }
  }
}

}  // namespace
}  // namespace course::parallel
