// 1-bit Adam on 2, 3 and 4 CPU ranks: the compressed all-reduce against DeepSpeed's code
// transcribed (every rank knows every rank's seeded input), error feedback's convergence, the
// warm-up bit for bit AdamW without bias correction, the compressed step (and exp_avg_mask)
// against hand-computed updates, and, under DDP, gradients kept local with replicas that stay
// identical while about a thirtieth of the bytes travel (1-bit LAMB: onebit_lamb_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/parallel/data_parallel/ddp.h"
#include "common/parallel/data_parallel/onebit_optimizer.h"
#include "common/parallel/data_parallel_training.h"
#include "common/parallel/tests/deepspeed_onebit.h"
#include "common/parallel/tests/parity_subjects.h"
#include "common/testing/parameter_values.h"
#include "common/testing/world.h"

namespace course::parallel {
namespace {

using testing::world;

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

// Tensors of uneven sizes (a 7-element one among them), their seeded values per rank and step.
const std::vector<int64_t> kUnevenSizes = {1001, 7, 64, 333, 4101};

std::vector<std::vector<float>> tensors_of(int rank, int step) {
  std::vector<std::vector<float>> out;
  for (size_t t = 0; t < kUnevenSizes.size(); ++t) {
    out.push_back(seeded_values(kUnevenSizes[t], rank, 10 * step + static_cast<int>(t)));
  }
  return out;
}

// This rank's tensors in the all-reduce's padded buffer.
Tensor buffer_of(const CompressedAllreduce& allreduce, const std::vector<std::vector<float>>& in,
                 Device device) {
  std::vector<float> flat(allreduce.padded_numel(), 0.0f);
  for (size_t t = 0; t < in.size(); ++t) {
    std::copy(in[t].begin(), in[t].end(), flat.begin() + allreduce.offset(t));
  }
  return Tensor::from_vector(flat, {allreduce.padded_numel()}).to(device);
}

// Tensor t of the buffer `got` against `want`, its padding zero.
void expect_tensor(const std::vector<float>& got, const CompressedAllreduce& allreduce, size_t t,
                   size_t tensors, const std::vector<float>& want, const std::string& where) {
  const int64_t at = allreduce.offset(t);
  const int64_t end = t + 1 < tensors ? allreduce.offset(t + 1) : allreduce.padded_numel();
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[at + i], want[i], 2e-5f * (1.0f + std::fabs(want[i])))
        << where << " tensor " << t << " element " << i;
  }
  for (int64_t i = at + static_cast<int64_t>(want.size()); i < end; ++i) {
    ASSERT_EQ(got[i], 0.0f) << where << ": the padding after tensor " << t << " stays zero";
  }
}

// Five calls, the errors carried from call to call: every tensor as DeepSpeed's code computes
// it, on every device this machine has; on one rank the buffer comes back untouched.
TEST(CompressedAllreduce, IsDeepSpeedsPerTensorCompressionOnUnevenTensors) {
  for (const Device device : testing::check_devices()) {
    CompressedAllreduce allreduce(kUnevenSizes, world(), device);
    DeepSpeedCompressedAllreduce deepspeed(kUnevenSizes, world()->size());
    for (int step = 0; step < 5; ++step) {
      std::vector<std::vector<std::vector<float>>> every;
      for (int r = 0; r < world()->size(); ++r) every.push_back(tensors_of(r, step));
      Tensor x = buffer_of(allreduce, every[world()->rank()], device);
      allreduce.average_(x);
      const std::vector<std::vector<float>> want = deepspeed.average(every);
      const std::vector<float> got = x.to(Device::cpu()).to_vector<float>();
      for (size_t t = 0; t < want.size(); ++t) {
        expect_tensor(got, allreduce, t, want.size(), want[t],
                      device.str() + " step " + std::to_string(step));
      }
    }
  }
}

// With the same inputs every step, error feedback makes the results' running mean approach the
// true mean (what one step drops is sent in later ones): the mean deviation falls about 14-fold
// in 64 steps here, where without error feedback every step would send the same, as far off as
// the first.
TEST(CompressedAllreduce, ErrorFeedbackMakesTheRunningMeanApproachTheTrueMean) {
  if (world()->size() == 1) GTEST_SKIP() << "one rank sends its values as they are";
  const int64_t n = 517;
  CompressedAllreduce allreduce({n}, world(), Device::cpu());
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

using OptimizerMaker = std::function<std::unique_ptr<optim::Optimizer>(
    std::vector<std::pair<std::string, nn::Parameter*>>, const KeepGradientsLocal&)>;

// The optimizer `flags` name, as the labs make it.
OptimizerMaker made_from(const optim::OptimizerFlags& flags) {
  return [flags](std::vector<std::pair<std::string, nn::Parameter*>> params,
                 const KeepGradientsLocal& keep_local) {
    return make_parallel_optimizer(flags, std::move(params), world(), keep_local);
  };
}

GptRun train_gpt(const OptimizerMaker& make_optimizer, int steps) {
  parity::Subject s = parity::gpt_subject();
  auto step =
      std::make_unique<DataParallelModel>(*s.model, *s.blocks, world(), DataParallelOptions{});
  DataParallelTraining training(std::move(step), world(), 1, std::nullopt);
  const auto optimizer = make_optimizer(training.optimized(), [&](std::function<bool()> local) {
    training.keep_gradients_local_while(std::move(local));
  });
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

constexpr float kWarmUpLr = 3e-3f, kWarmUpDecay = 0.1f;

// The 1-bit optimizer `onebit` during its warm-up (freeze_step past the run) against `base`.
void expect_warm_up_is(const OptimizerMaker& base, optim::OptimizerKind onebit) {
  const optim::OptimizerFlags flags{
      .kind = onebit, .lr = kWarmUpLr, .weight_decay = kWarmUpDecay, .freeze_step = 100};
  const GptRun want = train_gpt(base, 3), got = train_gpt(made_from(flags), 3);
  for (size_t step = 0; step < want.parameters.size(); ++step) {
    ASSERT_EQ(got.parameters[step], want.parameters[step])
        << optim::optimizer_name(onebit) << " step " << step;
  }
}

// DeepSpeed's OnebitAdam updates by exp_avg / (sqrt(exp_avg_sq) + eps), without bias correction.
TEST(OneBitAdam, WarmUpIsAdamWithoutBiasCorrectionBitForBit) {
  const OptimizerMaker adam = [](std::vector<std::pair<std::string, nn::Parameter*>> params,
                                 const KeepGradientsLocal&) {
    return std::make_unique<optim::AdamW>(
        std::move(params),
        optim::AdamWOptions{
            .lr = kWarmUpLr, .weight_decay = kWarmUpDecay, .bias_correction = false});
  };
  expect_warm_up_is(adam, optim::OptimizerKind::kOneBitAdam);
}

// After the warm-up DDP stops reducing gradients, the momentum travels as signs, and every rank
// still applies the same update.
TEST(OneBitAdam, CompressedStepsKeepGradientsLocalAndSendAThirtySecondOfTheBytes) {
  if (world()->size() == 1) GTEST_SKIP() << "needs several ranks";
  const optim::OptimizerFlags flags{.kind = optim::OptimizerKind::kOneBitAdam,
                                    .lr = 3e-3f,
                                    .weight_decay = 0.1f,
                                    .freeze_step = 2};
  const GptRun run = train_gpt(made_from(flags), 5);
  for (int step = 0; step < 5; ++step) {
    EXPECT_EQ(run.local_gradients[step], step >= 2) << "step " << step;
    EXPECT_EQ(run.divergence[step], 0.0f) << "step " << step;
  }
  // Each compressed step: the all-to-all and the all-gather of 1 bit per value (and its padding)
  // and a scale per tensor, against DDP's all-reduce of 32 bits per value.
  for (int step = 2; step < 5; ++step) {
    const double ratio = run.bytes[0] / run.bytes[step];
    EXPECT_GT(ratio, 24.0) << "step " << step;
    EXPECT_LT(ratio, 33.0) << "step " << step;
  }
}

// 1-bit Adam's warm-up step and compressed step for one parameter, by hand on the host (every
// rank knows every rank's seeded gradients): the warm-up step on their mean, then the local
// momentum averaged by DeepSpeed's compressed all-reduce (transcribed) and the frozen variance;
// the moments without bias correction, as DeepSpeed's. With `masked`, the elements whose
// gradient is always 0 (every 11th, from the 5th: seeded_values' zeros, zeroed on every rank)
// are exp_avg_mask's: they move by the weight decay alone.
void expect_hand_computed_steps(bool masked) {
  constexpr int64_t kN = 203;
  constexpr float kLr = 0.01f, kBeta1 = 0.9f, kBeta2 = 0.999f, kEps = 1e-8f, kDecay = 0.1f;
  const auto unused = [masked](int64_t i) { return masked && i % 11 == 4; };
  const auto gradients = [&](int step) {
    std::vector<std::vector<float>> all = every_rank(kN, step);
    for (auto& g : all) {
      for (int64_t i = 0; i < kN; ++i) g[i] = unused(i) ? 0.0f : g[i];
    }
    return all;
  };
  nn::Parameter p(Tensor::from_vector(seeded_values(kN, 0, 99), {kN}));
  OneBitAdam optimizer({{"p", &p}},
                       {.lr = kLr,
                        .beta1 = kBeta1,
                        .beta2 = kBeta2,
                        .eps = kEps,
                        .weight_decay = kDecay,
                        .freeze_step = 1,
                        .exp_avg_mask = masked},
                       world());
  // Step 1, warm-up: the gradients' mean (what DDP would have averaged).
  const std::vector<std::vector<float>> first = gradients(1);
  std::vector<float> mean(kN, 0.0f);
  for (const auto& g : first) {
    for (int64_t i = 0; i < kN; ++i) mean[i] += g[i] / first.size();
  }
  std::vector<float> w = p.value.to_vector<float>(), m(kN), v(kN);
  for (int64_t i = 0; i < kN; ++i) {
    m[i] = (1 - kBeta1) * mean[i];
    v[i] = (1 - kBeta2) * mean[i] * mean[i];
    w[i] -= kLr * (m[i] / (std::sqrt(v[i]) + kEps) + kDecay * w[i]);
  }
  copy_(p.grad, Tensor::from_vector(mean, {kN}));
  optimizer.step();
  // Step 2, compressed: each rank's own gradient into its momentum, then the compressed mean.
  const std::vector<std::vector<float>> second = gradients(2);
  std::vector<std::vector<std::vector<float>>> momenta;
  for (const auto& g : second) {
    std::vector<float> local(kN);
    for (int64_t i = 0; i < kN; ++i) local[i] = kBeta1 * m[i] + (1 - kBeta1) * g[i];
    momenta.push_back({local});
  }
  DeepSpeedCompressedAllreduce deepspeed({kN}, world()->size());
  const std::vector<float> averaged = deepspeed.average(momenta)[0];
  for (int64_t i = 0; i < kN; ++i) {
    const float momentum = unused(i) ? 0.0f : averaged[i];
    w[i] -= kLr * (momentum / (std::sqrt(v[i]) + kEps) + kDecay * w[i]);
  }
  copy_(p.grad, Tensor::from_vector(second[world()->rank()], {kN}));
  optimizer.step();
  const std::vector<float> got = p.value.to_vector<float>();
  for (int64_t i = 0; i < kN; ++i) {
    ASSERT_NEAR(got[i], w[i], 2e-6f * (1 + std::fabs(w[i]))) << "element " << i;
  }
}

TEST(OneBitAdam, CompressedStepMatchesTheUpdateComputedByHand) {
  expect_hand_computed_steps(false);
}

// Without the mask an unused element's momentum arrives as +-scale and, over a variance of 0,
// moves it by about lr x scale / eps.
TEST(OneBitAdam, MomentumMaskLeavesUnusedElementsToTheDecay) { expect_hand_computed_steps(true); }

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
