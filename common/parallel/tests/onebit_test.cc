// 1-bit Adam and LAMB on 2, 3 and 4 CPU ranks: the compressed all-reduce against the algorithm
// computed by hand on the host (every rank knows every rank's seeded input), error feedback's
// convergence, the warm-up bit for bit AdamW / LAMB, the compressed steps against hand-computed
// updates, and, under DDP, gradients kept local with replicas that stay identical while about a
// thirtieth of the bytes travel.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/optim/large_batch.h"
#include "common/parallel/data_parallel/ddp.h"
#include "common/parallel/data_parallel/onebit_optimizer.h"
#include "common/parallel/data_parallel_training.h"
#include "common/parallel/tests/parity_subjects.h"
#include "common/testing/parameter_values.h"
#include "common/testing/world.h"

namespace course::parallel {
namespace {

using testing::world;

// Signed values with exact zeros, different on every rank and step.
std::vector<float> seeded_values(int64_t n, int rank, int step) {
  std::mt19937 rng(977 * step + 31 * rank + 5);
  std::normal_distribution<float> normal(0.1f * static_cast<float>(rank - 1), 1.0f);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i % 11 == 4 ? 0.0f : normal(rng);
  return v;
}

// The compressed all-reduce by hand, in double where it sums: each rank's worker error and the
// servers' errors carried between calls.
class ReferenceAllreduce {
 public:
  ReferenceAllreduce(int64_t n, int ranks, int64_t chunk)
      : n_(n),
        ranks_(ranks),
        chunk_(chunk),
        worker_(ranks, std::vector<float>(ranks * chunk)),
        server_(ranks, std::vector<float>(chunk)) {}

  std::vector<float> average(const std::vector<std::vector<float>>& inputs) {
    std::vector<std::vector<float>> sent(ranks_);  // each rank's compressed buffer
    for (int r = 0; r < ranks_; ++r) {
      std::vector<float> v(ranks_ * chunk_, 0.0f);
      for (int64_t i = 0; i < n_; ++i) v[i] = inputs[r][i];
      sent[r] = compress(v, worker_[r], n_);
    }
    std::vector<float> out(n_);
    for (int q = 0; q < ranks_; ++q) {  // server q's chunk
      std::vector<float> mean(chunk_);
      for (int64_t j = 0; j < chunk_; ++j) {
        double sum = 0;
        for (int r = 0; r < ranks_; ++r) sum += sent[r][q * chunk_ + j];
        mean[j] = static_cast<float>(sum / ranks_);
      }
      const int64_t valid = std::clamp<int64_t>(n_ - q * chunk_, 0, chunk_);
      const std::vector<float> compressed = compress(mean, server_[q], valid);
      for (int64_t j = 0; j < valid; ++j) out[q * chunk_ + j] = compressed[j];
    }
    return out;
  }

 private:
  // x + error in chunks of chunk_: mean |.| over the valid elements times the signs.
  std::vector<float> compress(const std::vector<float>& x, std::vector<float>& error,
                              int64_t valid) const {
    std::vector<float> out(x.size(), 0.0f);
    for (int64_t begin = 0; begin < static_cast<int64_t>(x.size()); begin += chunk_) {
      const int64_t end = std::min(begin + chunk_, valid);
      double total = 0;
      for (int64_t i = begin; i < end; ++i) total += std::fabs(x[i] + error[i]);
      const float scale = end > begin ? static_cast<float>(total / (end - begin)) : 0.0f;
      for (int64_t i = begin; i < end; ++i) {
        const float v = x[i] + error[i];
        out[i] = v >= 0.0f ? scale : -scale;
        error[i] = v - out[i];
      }
    }
    return out;
  }

  int64_t n_;
  int ranks_;
  int64_t chunk_;
  std::vector<std::vector<float>> worker_, server_;
};

std::vector<std::vector<float>> every_rank(int64_t n, int step) {
  std::vector<std::vector<float>> all;
  for (int r = 0; r < world()->size(); ++r) all.push_back(seeded_values(n, r, step));
  return all;
}

Tensor padded(const std::vector<float>& v, int64_t size, Device device) {
  std::vector<float> p(size, 0.0f);
  std::copy(v.begin(), v.end(), p.begin());
  return Tensor::from_vector(p, {size}).to(device);
}

TEST(CompressedAllreduce, MatchesTheAlgorithmComputedByHand) {
  const int64_t n = 1001 + 7 * world()->size();
  for (const Device device : testing::check_devices()) {
    CompressedAllreduce allreduce(n, world(), device);
    ReferenceAllreduce reference(n, world()->size(), allreduce.chunk());
    for (int step = 0; step < 3; ++step) {  // the errors carried from step to step
      Tensor x = padded(seeded_values(n, world()->rank(), step), allreduce.padded_numel(), device);
      allreduce.average_(x);
      const std::vector<float> want = reference.average(every_rank(n, step));
      const std::vector<float> got = x.to(Device::cpu()).to_vector<float>();
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i])))
            << device.str() << " step " << step << " element " << i;
      }
    }
  }
}

// With the same inputs every step, error feedback makes the results' running mean approach the
// true mean (what one step drops is sent in later ones): the mean deviation falls about 14-fold
// in 64 steps here, where without error feedback every step would send the same, as far off as
// the first.
TEST(CompressedAllreduce, ErrorFeedbackMakesTheRunningMeanApproachTheTrueMean) {
  const int64_t n = 517;
  CompressedAllreduce allreduce(n, world(), Device::cpu());
  const std::vector<std::vector<float>> inputs = every_rank(n, 0);
  std::vector<double> truth(n, 0.0), sum(n, 0.0);
  for (const auto& input : inputs) {
    for (int64_t i = 0; i < n; ++i) truth[i] += input[i] / inputs.size();
  }
  const auto mean_deviation = [&](int steps) {
    double total = 0;
    for (int64_t i = 0; i < n; ++i) total += std::fabs(sum[i] / steps - truth[i]);
    return total / n;
  };
  double first = 0;
  constexpr int kSteps = 64;
  for (int step = 1; step <= kSteps; ++step) {
    Tensor x = padded(inputs[world()->rank()], allreduce.padded_numel(), Device::cpu());
    allreduce.average_(x);
    const std::vector<float> got = x.to_vector<float>();
    for (int64_t i = 0; i < n; ++i) sum[i] += got[i];
    if (step == 1) first = mean_deviation(1);
  }
  EXPECT_GT(first, 0.2) << "one step of signs cannot carry the values' magnitudes";
  EXPECT_LT(mean_deviation(kSteps), first / 8) << "after " << kSteps << " steps";
}

// Rank 0's values of `t` (the same shape on every rank).
std::vector<float> gathered_first(const Tensor& t) {
  Tensor copy = t.clone();
  world()->broadcast(copy, 0)->wait();
  return copy.to_vector<float>();
}

// The sharding tests' GPT under DDP (one process alone) with the optimizer `flags` name, and
// what its steps did.
struct GptRun {
  std::vector<std::vector<float>> parameters;  // after every step
  std::vector<double> bytes;                   // sent by this rank in every step
  std::vector<float> divergence;               // replica_divergence after every step
  std::vector<bool> local_gradients;           // whether the step's gradients differed by rank
};

GptRun train_gpt(const optim::OptimizerFlags& flags, int steps) {
  parity::Subject s = parity::gpt_subject();
  auto step =
      std::make_unique<DataParallelModel>(*s.model, *s.blocks, world(), DataParallelOptions{});
  DataParallelTraining training(std::move(step), world(), 1, std::nullopt);
  const auto optimizer = make_parallel_optimizer(
      flags, training.optimized(), world(),
      [&](std::function<bool()> local) { training.keep_gradients_local_while(std::move(local)); });
  GptRun run;
  for (int i = 0; i < steps; ++i) {
    const double start = world()->traffic().bytes;
    const parity::Batch batch = parity::gpt_batch(i);
    training.forward_backward({batch.input, batch.labels}, [](Phase) {});
    const double backward_bytes = world()->traffic().bytes - start;
    // Gradients left local differ between the ranks (each saw its own batch).
    const Tensor& grad = s.model->parameters().front()->grad;
    const float differs = grad.to_vector<float>() != gathered_first(grad) ? 1.0f : 0.0f;
    run.local_gradients.push_back(allreduce_max({differs}, *world())[0] > 0.0f);
    const double before_step = world()->traffic().bytes;
    optimizer->step();
    training.after_step();
    run.bytes.push_back(backward_bytes + world()->traffic().bytes - before_step);
    run.parameters.push_back(testing::parameter_values(*s.model));
    run.divergence.push_back(replica_divergence(*s.model, *world()));
  }
  return run;
}

// The 1-bit optimizer `onebit` during its warm-up (freeze_step past the run) against `base`.
void expect_warm_up_is_its_base(optim::OptimizerKind base, optim::OptimizerKind onebit) {
  const optim::OptimizerFlags flags{.kind = base, .lr = 3e-3f, .weight_decay = 0.1f};
  optim::OptimizerFlags onebit_flags = flags;
  onebit_flags.kind = onebit;
  onebit_flags.freeze_step = 100;
  const GptRun want = train_gpt(flags, 3), got = train_gpt(onebit_flags, 3);
  for (size_t step = 0; step < want.parameters.size(); ++step) {
    ASSERT_EQ(got.parameters[step], want.parameters[step])
        << optim::optimizer_name(onebit) << " step " << step;
  }
}

TEST(OneBitAdam, WarmUpIsAdamWBitForBit) {
  expect_warm_up_is_its_base(optim::OptimizerKind::kAdamW, optim::OptimizerKind::kOneBitAdam);
}

TEST(OneBitLamb, WarmUpIsLambBitForBit) {
  expect_warm_up_is_its_base(optim::OptimizerKind::kLamb, optim::OptimizerKind::kOneBitLamb);
}

// After the warm-up DDP stops reducing gradients, the momentum travels as signs, and every rank
// still applies the same update.
TEST(OneBitAdam, CompressedStepsKeepGradientsLocalAndSendAThirtySecondOfTheBytes) {
  if (world()->size() == 1) GTEST_SKIP() << "needs several ranks";
  const optim::OptimizerFlags flags{.kind = optim::OptimizerKind::kOneBitAdam,
                                    .lr = 3e-3f,
                                    .weight_decay = 0.1f,
                                    .freeze_step = 2};
  const GptRun run = train_gpt(flags, 5);
  for (int step = 0; step < 5; ++step) {
    EXPECT_EQ(run.local_gradients[step], step >= 2) << "step " << step;
    EXPECT_EQ(run.divergence[step], 0.0f) << "step " << step;
  }
  // Each compressed step: the all-to-all and the all-gather of 1 bit per value and a scale per
  // chunk, against DDP's all-reduce of 32 bits per value.
  for (int step = 2; step < 5; ++step) {
    const double ratio = run.bytes[0] / run.bytes[step];
    EXPECT_GT(ratio, 24.0) << "step " << step;
    EXPECT_LT(ratio, 33.0) << "step " << step;
  }
}

// Adam's and LAMB's compressed step for one parameter, by hand on the host (every rank knows every
// rank's seeded gradients): the warm-up step on their mean, then the local momentum averaged by
// the compressed all-reduce, the frozen variance, and for LAMB the warm-up's trust ratio.
struct HandParameter {
  std::vector<float> w, m, v;
};

void expect_hand_computed_steps(OneBitBase base) {
  constexpr int64_t kN = 203;
  constexpr float kLr = 0.01f, kBeta1 = 0.9f, kBeta2 = 0.999f, kEps = 1e-8f, kDecay = 0.1f;
  const bool lamb = base == OneBitBase::kLamb;
  nn::Parameter p(Tensor::from_vector(seeded_values(kN, 0, 99), {kN}));
  OneBitOptimizer optimizer({{"p", &p}},
                            {.base = base,
                             .lr = kLr,
                             .beta1 = kBeta1,
                             .beta2 = kBeta2,
                             .eps = kEps,
                             .weight_decay = kDecay,
                             .freeze_step = 1},
                            world());
  // Step 1, warm-up: the gradients' mean (what DDP would have averaged).
  const std::vector<std::vector<float>> first = every_rank(kN, 1);
  std::vector<float> mean(kN, 0.0f);
  for (const auto& g : first) {
    for (int64_t i = 0; i < kN; ++i) mean[i] += g[i] / first.size();
  }
  HandParameter h{p.value.to_vector<float>(), std::vector<float>(kN), std::vector<float>(kN)};
  const float bc1 = 1 - kBeta1, bc2 = 1 - kBeta2;
  std::vector<float> r(kN);
  double w_norm = 0, r_norm = 0;
  for (int64_t i = 0; i < kN; ++i) {
    h.m[i] = (1 - kBeta1) * mean[i];
    h.v[i] = (1 - kBeta2) * mean[i] * mean[i];
    r[i] = h.m[i] / bc1 / (std::sqrt(h.v[i] / bc2) + kEps) + kDecay * h.w[i];
    w_norm += h.w[i] * h.w[i];
    r_norm += r[i] * r[i];
  }
  const float trust = lamb ? static_cast<float>(std::sqrt(w_norm / r_norm)) : 1.0f;
  for (int64_t i = 0; i < kN; ++i) h.w[i] -= kLr * trust * r[i];
  copy_(p.grad, Tensor::from_vector(mean, {kN}));
  optimizer.step();
  // Step 2, compressed: each rank's own gradient into its momentum, then the compressed mean.
  const std::vector<std::vector<float>> second = every_rank(kN, 2);
  std::vector<std::vector<float>> momenta;
  for (const auto& g : second) {
    std::vector<float> m(kN);
    for (int64_t i = 0; i < kN; ++i) m[i] = kBeta1 * h.m[i] + (1 - kBeta1) * g[i];
    momenta.push_back(m);
  }
  ReferenceAllreduce reference(kN, world()->size(), optimizer.allreduce().chunk());
  const std::vector<float> averaged = reference.average(momenta);
  const float bc1_2 = 1 - kBeta1 * kBeta1;
  for (int64_t i = 0; i < kN; ++i) {
    const float direction =
        averaged[i] / bc1_2 / (std::sqrt(h.v[i] / bc2) + kEps) + kDecay * h.w[i];
    h.w[i] -= kLr * trust * direction;
  }
  copy_(p.grad, Tensor::from_vector(second[world()->rank()], {kN}));
  optimizer.step();
  const std::vector<float> got = p.value.to_vector<float>();
  for (int64_t i = 0; i < kN; ++i) {
    ASSERT_NEAR(got[i], h.w[i], 2e-6f * (1 + std::fabs(h.w[i]))) << "element " << i;
  }
}

TEST(OneBitAdam, CompressedStepMatchesTheUpdateComputedByHand) {
  expect_hand_computed_steps(OneBitBase::kAdam);
}

TEST(OneBitLamb, CompressedStepKeepsTheWarmUpsTrustRatio) {
  expect_hand_computed_steps(OneBitBase::kLamb);
}

TEST(OneBitAdam, ShardedModesRefuseToKeepGradientsLocal) {
  if (world()->size() == 1) GTEST_SKIP() << "sharding needs several ranks";
  parity::Subject s = parity::gpt_subject();
  DataParallelTraining training(
      std::make_unique<DataParallelModel>(*s.model, *s.blocks, world(),
                                          DataParallelOptions{.sharding = Sharding::kZero2}),
      world(), 1, std::nullopt);
  try {
    training.keep_gradients_local_while([] { return true; });
    FAIL() << "ZeRO-2 kept its gradients local";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs DDP or one process"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace course::parallel
