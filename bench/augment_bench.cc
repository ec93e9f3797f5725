// The CPU cost of augmentation per image, in the loader's workers (RandAugment,
// TrivialAugmentWide and the jitter on u8 images, one image per call) against the batch stage
// on the training device (the jitter and MixUp / CutMix of a normalised batch of 256, here on
// the CPU: OpenMP over the batch). Items are images: read the "per item" time.
//   bazel run -c opt //bench:augment_bench
#include <benchmark/benchmark.h>

#include <opencv2/core.hpp>

#include "common/data/augment_policy.h"
#include "common/data/batch_augment.h"
#include "common/data/batch_mix.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

constexpr int64_t kBatch = 256;

// Sides and channels: 28 x 28 grey (Fashion-MNIST), 32 x 32 colour (CIFAR-10), 224 x 224 colour
// (ImageNet's training size).
void image_sizes(benchmark::internal::Benchmark* b) {
  b->Args({28, 1})->Args({32, 3})->Args({224, 3});
}

cv::Mat random_image(const benchmark::State& state) {
  const int side = static_cast<int>(state.range(0)), channels = static_cast<int>(state.range(1));
  cv::Mat image(side, side, CV_8UC(channels));
  cv::randu(image, 0, 256);
  return image;
}

void per_image(benchmark::State& state, const AugmentPolicy& policy) {
  const cv::Mat image = random_image(state);
  std::mt19937 rng(1);
  for (auto _ : state) benchmark::DoNotOptimize(augment(image, policy, rng).data);
  state.SetItemsProcessed(state.iterations());
}

void BM_RandAugmentPerImage(benchmark::State& state) {
  per_image(state, {.kind = AugmentPolicyKind::kRandAugment, .ops = 2, .magnitude = 9});
}
BENCHMARK(BM_RandAugmentPerImage)->Apply(image_sizes);

void BM_TrivialAugmentPerImage(benchmark::State& state) {
  per_image(state, {.kind = AugmentPolicyKind::kTrivialAugmentWide});
}
BENCHMARK(BM_TrivialAugmentPerImage)->Apply(image_sizes);

const JitterOptions kJitter{.max_translate = 3, .brightness = 0.2f, .contrast = 0.2f};

void BM_JitterPerImage(benchmark::State& state) {
  const cv::Mat image = random_image(state);
  std::mt19937 rng(2);
  for (auto _ : state) {
    benchmark::DoNotOptimize(apply_jitter(image, draw_jitter(kJitter, true, rng)).data);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_JitterPerImage)->Apply(image_sizes);

Tensor normalised_batch(const benchmark::State& state) {
  return testing::random_tensor({kBatch, state.range(1), state.range(0), state.range(0)},
                                DType::kF32, Device::cpu(), 3)
      .tensor;
}

void BM_JitterBatchOnDevice(benchmark::State& state) {
  const Tensor batch = normalised_batch(state);
  const std::vector<float> mean(state.range(1), 0.5f), std(state.range(1), 0.25f);
  std::mt19937 rng(4);
  for (auto _ : state)
    benchmark::DoNotOptimize(jitter_batch(batch, kJitter, mean, std, rng).data());
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_JitterBatchOnDevice)->Apply(image_sizes)->UseRealTime();

void BM_MixUpCutMixBatchOnDevice(benchmark::State& state) {
  const Tensor batch = normalised_batch(state);
  const MixOptions mix{.mode = MixMode::kElement};
  std::mt19937 rng(5);
  for (auto _ : state) {
    const MixPlan plan = plan_batch_mix(kBatch, state.range(0), state.range(0), mix, rng);
    benchmark::DoNotOptimize(mix_images(batch, plan).data());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_MixUpCutMixBatchOnDevice)->Apply(image_sizes)->UseRealTime();

}  // namespace
}  // namespace course
