// Drawing a batch's MixUp / CutMix plan, and applying it with the device kernels.
#include "common/data/batch_mix.h"

#include <algorithm>
#include <cmath>

#include "common/core/named_choices.h"
#include "common/kernels/batch_mix.h"
#include "common/tensor/pinned_staging.h"

namespace course {

namespace {

struct PairDraw {
  float weight = 1.0f, lambda = 1.0f;
  std::array<int32_t, 4> box = {0, 0, 0, 0};
};

// One mixing decision (for a batch, a pair or an element).
PairDraw draw(int64_t height, int64_t width, const MixOptions& o, const CutMixCutter& cut,
              std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  if (uniform(rng) >= o.prob) return {};
  const bool both = o.mixup_alpha > 0 && o.cutmix_alpha > 0;
  const bool cutmix = o.cutmix_alpha > 0 && (!both || uniform(rng) < o.switch_prob);
  if (!cutmix) {
    const float lambda = sample_beta(o.mixup_alpha, rng);
    return {lambda, lambda, {0, 0, 0, 0}};
  }
  const CutMixCut c = cut(sample_beta(o.cutmix_alpha, rng), height, width, rng);
  return {1.0f, c.lambda, c.box};
}

}  // namespace

const char* mix_mode_name(MixMode mode) {
  switch (mode) {
    case MixMode::kBatch:
      return "batch";
    case MixMode::kPair:
      return "pair";
    case MixMode::kElement:
      return "elem";
  }
  COURSE_FAIL("mix mode ", static_cast<int>(mode), " has no name");
}

std::vector<std::pair<std::string, MixMode>> mix_mode_choices() {
  return named_choices({MixMode::kBatch, MixMode::kPair, MixMode::kElement}, mix_mode_name);
}

float sample_beta(float alpha, std::mt19937& rng) {
  COURSE_CHECK(alpha > 0, "Beta(alpha, alpha) needs alpha > 0, got ", alpha);
  std::gamma_distribution<float> gamma(alpha, 1.0f);
  const float a = gamma(rng), b = gamma(rng);
  return a + b > 0 ? a / (a + b) : 0.5f;
}

CutMixCut cutmix_cut(float lambda, int64_t height, int64_t width, std::mt19937& rng) {
  const float side = std::sqrt(std::clamp(1.0f - lambda, 0.0f, 1.0f));
  const int64_t cut_h = static_cast<int64_t>(static_cast<float>(height) * side);
  const int64_t cut_w = static_cast<int64_t>(static_cast<float>(width) * side);
  const int64_t cy = std::uniform_int_distribution<int64_t>(0, height - 1)(rng);
  const int64_t cx = std::uniform_int_distribution<int64_t>(0, width - 1)(rng);
  const auto clip = [](int64_t v, int64_t end) {
    return static_cast<int32_t>(std::clamp<int64_t>(v, 0, end));
  };
  const std::array<int32_t, 4> box = {
      clip(cy - cut_h / 2, height), clip(cy - cut_h / 2 + cut_h, height),
      clip(cx - cut_w / 2, width), clip(cx - cut_w / 2 + cut_w, width)};
  const float area = static_cast<float>((box[1] - box[0]) * (box[3] - box[2]));
  return {box, 1.0f - area / static_cast<float>(height * width)};
}

void validate(const MixOptions& o) {
  COURSE_CHECK(o.mixup_alpha >= 0 && o.cutmix_alpha >= 0 && o.mixup_alpha + o.cutmix_alpha > 0,
               "--mixup and --cutmix alphas must not be negative and one must be positive, got ",
               o.mixup_alpha, " and ", o.cutmix_alpha);
  COURSE_CHECK(o.prob >= 0 && o.prob <= 1 && o.switch_prob >= 0 && o.switch_prob <= 1,
               "mixing and switch probabilities must be in [0, 1], got ", o.prob, " and ",
               o.switch_prob);
  COURSE_CHECK(o.label_smoothing >= 0 && o.label_smoothing < 1,
               "label smoothing must be in [0, 1), got ", o.label_smoothing);
}

MixPlan plan_batch_mix(int64_t samples, int64_t height, int64_t width, const MixOptions& o,
                       std::mt19937& rng, const CutMixCutter& cut) {
  COURSE_CHECK(samples % 2 == 0,
               "MixUp and CutMix pair each sample with its partner in the "
               "flipped batch: the batch size must be even, got ",
               samples);
  COURSE_CHECK(height > 0 && width > 0, "images of ", height, " x ", width, " pixels");
  validate(o);
  MixPlan plan;
  plan.weights.resize(samples);
  plan.lambdas.resize(samples);
  plan.boxes.resize(4 * samples);
  const auto set = [&](int64_t i, const PairDraw& d) {
    plan.weights[i] = d.weight;
    plan.lambdas[i] = d.lambda;
    std::copy(d.box.begin(), d.box.end(), plan.boxes.begin() + 4 * i);
  };
  const PairDraw whole_batch =
      o.mode == MixMode::kBatch ? draw(height, width, o, cut, rng) : PairDraw{};
  for (int64_t i = 0; i < samples; ++i) {
    if (o.mode == MixMode::kBatch) {
      set(i, whole_batch);
    } else if (o.mode == MixMode::kElement) {
      set(i, draw(height, width, o, cut, rng));
    } else if (i < samples / 2) {  // a pair: both partners mix with each other alike
      const PairDraw d = draw(height, width, o, cut, rng);
      set(i, d);
      set(samples - 1 - i, d);
    }
  }
  return plan;
}

MixedBatch mix_batch(const Tensor& images, const Tensor& labels, const MixPlan& plan,
                     int64_t classes, float label_smoothing) {
  const int64_t n = images.dim() == 4 ? images.size(0) : -1;
  COURSE_CHECK(n >= 0 && static_cast<int64_t>(plan.weights.size()) == n && labels.numel() == n,
               "a mixing plan for ", plan.weights.size(), " samples, images ", images.str(),
               " and labels ", labels.str());
  const Device device = images.device();
  const Tensor lambdas = upload_to(device, plan.lambdas, {n});
  return {mix_images(images, plan),
          mixed_soft_targets(labels.to(device), lambdas, classes, label_smoothing)};
}

Tensor mix_images(const Tensor& images, const MixPlan& plan) {
  const int64_t n = static_cast<int64_t>(plan.weights.size());
  const Device device = images.device();
  return mix_with_flipped(images, upload_to(device, plan.weights, {n}),
                          upload_to(device, plan.boxes, {n, 4}));
}

}  // namespace course
