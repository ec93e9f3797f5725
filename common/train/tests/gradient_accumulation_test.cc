// Gradient accumulation against the whole batch's pass: a batch split into micro-batches of
// uneven sizes (each row once, in order, shares summing to one), and the accumulated gradient
// of a Vision Transformer (no batch norm) on signed, label-smoothed and soft-target batches
// equal to one pass over the whole batch; a batch too small to split is refused.
#include "common/train/gradient_accumulation.h"

#include <gtest/gtest.h>

#include "common/kernels/elementwise.h"
#include "common/kernels/soft_cross_entropy.h"
#include "common/models/models.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"
#include "common/train/classifier_step.h"

namespace course::train {
namespace {

using testing::to_floats;

constexpr int64_t kImages = 11;

Batch random_batch(bool soft_targets) {
  Batch b{testing::random_tensor({kImages, 1, 28, 28}, DType::kF32, Device::cpu(), 7, -2, 2).tensor,
          Tensor::from_vector<int64_t>({3, 0, 9, 9, 1, 4, 7, 2, 5, 8, 6}, {kImages})};
  if (soft_targets) {
    std::vector<float> targets(kImages * 10, 0.02f);
    for (int64_t i = 0; i < kImages; ++i) targets[i * 10 + (i * 3) % 10] = 0.82f;
    b.targets = Tensor::from_vector(targets, {kImages, 10});
  }
  return b;
}

TEST(GradientAccumulation, SplitsEveryRowOnceInOrderWithSharesOfOne) {
  const Batch b = random_batch(true);
  const std::vector<MicroBatch> micro = split_into_micro_batches(b, 4);
  ASSERT_EQ(micro.size(), 4u);
  const std::vector<int64_t> sizes{3, 3, 3, 2};
  std::vector<int64_t> labels;
  float shares = 0;
  for (size_t k = 0; k < micro.size(); ++k) {
    EXPECT_EQ(micro[k].batch.images.size(0), sizes[k]);
    EXPECT_EQ(micro[k].batch.targets.size(0), sizes[k]);
    EXPECT_FLOAT_EQ(micro[k].share, static_cast<float>(sizes[k]) / kImages);
    EXPECT_EQ(micro[k].last, k == 3);
    for (int64_t label : micro[k].batch.labels.to_vector<int64_t>()) labels.push_back(label);
    shares += micro[k].share;
  }
  EXPECT_EQ(labels, b.labels.to_vector<int64_t>());
  EXPECT_FLOAT_EQ(shares, 1.0f);
  EXPECT_EQ(to_floats(micro[3].batch.images), to_floats(b.images.slice(9, 11)));
}

TEST(GradientAccumulation, RefusesABatchSmallerThanItsMicroBatches) {
  EXPECT_NE(testing::error_of([] {
              split_into_micro_batches(random_batch(false), 12);
            }).find("a batch of 11 image(s) does not split into 12 micro-batches"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] {
              check_micro_batches(100, 32, 8, false);
            }).find("the epoch's last batch of 4 image(s) does not split into 8"),
            std::string::npos);
  check_micro_batches(100, 32, 8, true);  // the short batch is dropped
  check_micro_batches(100, 32, 4, false);
  EXPECT_EQ(describe_step_batch(8, 3), "24 (3 micro-batches of 8)");
  EXPECT_EQ(describe_step_batch(8, 1), "8");
}

std::vector<std::vector<float>> gradients(nn::Module& model) {
  std::vector<std::vector<float>> out;
  for (nn::Parameter* p : model.parameters()) out.push_back(to_floats(p->grad));
  return out;
}

// The step's loss and gradients over `parts` micro-batches.
std::pair<float, std::vector<std::vector<float>>> accumulated(const Batch& b, int64_t parts) {
  const nn::ModulePtr model =
      nn::make_model({.name = "vit-micro", .seed = 3, .image_size = 28}, Device::cpu());
  TrainingFlags flags;
  flags.label_smoothing = 0.1f;
  const Tensor loss = accumulate_gradients(*model, b, parts, [&](const MicroBatch& m) {
    if (m.batch.targets.defined()) {
      const ClassifierForward f = soft_target_forward(*model, m.batch, flags);
      backward_from_logits(
          *model, f,
          soft_target_cross_entropy_backward(f.loss, m.batch.targets, DType::kF32, m.share), flags);
      return f.loss.loss;
    }
    const ClassifierForward f = classifier_forward(*model, m.batch, flags);
    classifier_backward(*model, f, m.batch.labels, flags, m.share);
    return f.loss.loss;
  });
  return {loss.to_vector<float>()[0], gradients(*model)};
}

TEST(GradientAccumulation, MicroBatchesGiveTheWholeBatchsGradient) {
  for (const bool soft : {false, true}) {
    const Batch b = random_batch(soft);
    const auto [whole_loss, whole] = accumulated(b, 1);
    for (const int64_t parts : {2, 4, 11}) {
      const auto [loss, grads] = accumulated(b, parts);
      EXPECT_TRUE(testing::all_close({loss}, {whole_loss}, DType::kF32))
          << parts << " parts, soft " << soft;
      ASSERT_EQ(grads.size(), whole.size());
      for (size_t i = 0; i < grads.size(); ++i) {
        EXPECT_TRUE(testing::all_close(grads[i], whole[i], {.atol = 1e-6, .rtol = 1e-4}))
            << "parameter " << i << ", " << parts << " parts, soft " << soft;
      }
    }
  }
}

}  // namespace
}  // namespace course::train
