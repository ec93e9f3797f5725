// Softmax cross-entropy: the loss against a double-precision reference, and its gradient
// against central finite differences of that loss, with and without label smoothing.
#include "common/kernels/cross_entropy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "common/kernels/elementwise.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

using testing::all_close;
using testing::random_tensor;
using testing::to_floats;

// Mean smoothed cross-entropy in double precision.
template <class Real>
double reference_cross_entropy(const std::vector<Real>& logits, const std::vector<int64_t>& labels,
                               int64_t classes, double smoothing) {
  const int64_t rows = static_cast<int64_t>(labels.size());
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const Real* x = &logits[r * classes];
    double top = x[0];
    for (int64_t c = 1; c < classes; ++c) top = std::max<double>(top, x[c]);
    double s = 0;
    for (int64_t c = 0; c < classes; ++c) s += std::exp(x[c] - top);
    const double lse = top + std::log(s);
    for (int64_t c = 0; c < classes; ++c) {
      const double q = (c == labels[r] ? 1 - smoothing : 0) + smoothing / classes;
      total += q * (lse - x[c]);
    }
  }
  return total / rows;
}

std::vector<int64_t> labels_for(int64_t rows, int64_t classes) {
  std::vector<int64_t> labels(rows);
  for (int64_t r = 0; r < rows; ++r) labels[r] = (r * 7 + 3) % classes;
  return labels;
}

class CrossEntropyTest : public testing::DeviceCaseTest<float> {
 protected:
  float smoothing() const { return value<0>(); }
};

TEST_P(CrossEntropyTest, LossAndProbabilitiesMatchReference) {
  for (auto [rows, classes] : {std::pair<int64_t, int64_t>{1, 1}, {7, 10}, {33, 1000}}) {
    auto logits = random_tensor({rows, classes}, DType::kF32, device(), 21, -4.0f, 4.0f);
    const auto labels = labels_for(rows, classes);
    Tensor label_tensor = Tensor::from_vector(labels, {rows}).to(device());
    const CrossEntropyOutput out = softmax_cross_entropy(logits.tensor, label_tensor, smoothing());
    EXPECT_NEAR(out.host_loss(),
                reference_cross_entropy(logits.values, labels, classes, smoothing()), 1e-5);
    const std::vector<float> probs = to_floats(out.probs);
    for (int64_t r = 0; r < rows; ++r) {
      double row_sum = 0;
      for (int64_t c = 0; c < classes; ++c) row_sum += probs[r * classes + c];
      EXPECT_NEAR(row_sum, 1.0, 1e-5);
    }
  }
}

TEST_P(CrossEntropyTest, GradientMatchesCentralFiniteDifferences) {
  const int64_t rows = 5, classes = 7;
  auto logits = random_tensor({rows, classes}, DType::kF32, device(), 22, -2.0f, 2.0f);
  const auto labels = labels_for(rows, classes);
  Tensor label_tensor = Tensor::from_vector(labels, {rows}).to(device());
  const auto forward = softmax_cross_entropy(logits.tensor, label_tensor, smoothing());
  const float grad_loss = 0.5f;
  const std::vector<float> grad = to_floats(
      softmax_cross_entropy_backward(forward, label_tensor, smoothing(), DType::kF32, grad_loss));
  std::vector<float> numeric(grad.size());
  const double h = 1e-3;
  for (size_t i = 0; i < grad.size(); ++i) {
    std::vector<double> plus(logits.values.begin(), logits.values.end()), minus = plus;
    plus[i] += h;
    minus[i] -= h;
    numeric[i] = grad_loss *
                 (reference_cross_entropy(plus, labels, classes, smoothing()) -
                  reference_cross_entropy(minus, labels, classes, smoothing())) /
                 (2 * h);
  }
  EXPECT_TRUE(all_close(grad, numeric, {1e-4, 1e-3}));
}

TEST_P(CrossEntropyTest, HalfPrecisionLogitsGiveTheF32Loss) {
  auto logits = random_tensor({9, 10}, DType::kBF16, device(), 23, -3.0f, 3.0f);
  const auto labels = labels_for(9, 10);
  Tensor label_tensor = Tensor::from_vector(labels, {9}).to(device());
  const auto out = softmax_cross_entropy(logits.tensor, label_tensor, smoothing());
  EXPECT_NEAR(out.host_loss(), reference_cross_entropy(logits.values, labels, 10, smoothing()),
              1e-5);
  EXPECT_EQ(softmax_cross_entropy_backward(out, label_tensor, smoothing(), DType::kBF16).dtype(),
            DType::kBF16);
}

// On the CPU a bad label is reported at once; on the GPU (no host wait per step) its row's
// loss is NaN, which the training loop's next loss read reports.
TEST_P(CrossEntropyTest, BadLabelsAreReportedNotRead) {
  Tensor logits = zeros({2, 3}, DType::kF32, device());
  Tensor out_of_range = Tensor::from_vector<int64_t>({0, 3}, {2}).to(device());
  if (device().is_cpu()) {
    try {
      softmax_cross_entropy(logits, out_of_range, smoothing());
      FAIL() << "label 3 of 3 classes was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("1 label(s) outside [0, 3)"));
    }
  } else {
    const CrossEntropyOutput out = softmax_cross_entropy(logits, out_of_range, smoothing());
    EXPECT_TRUE(std::isnan(out.host_loss()));
  }
  EXPECT_THROW(
      softmax_cross_entropy(logits, Tensor::from_vector<int32_t>({0, 1}, {2}).to(device())), Error);
  EXPECT_THROW(softmax_cross_entropy(logits, Tensor::from_vector<int64_t>({0}, {1}).to(device())),
               Error);
}

COURSE_INSTANTIATE_DEVICE_CASES(CrossEntropyTest, ::testing::Values(0.0f, 0.1f));

}  // namespace
}  // namespace course
