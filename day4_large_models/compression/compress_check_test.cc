// The check of day 4's Part 7 (making a trained model cheaper): TP4.19's distillation loss
// against a double-precision reference written from the formula (log-sum-exp, no course
// kernel), its gradient against central finite differences of that reference, and
// hand-computed cases; TP4.20's per-channel int8 weights and TP4.21's 2:4 masks against
// hand-computed values and a direct reference. The cases are chosen so that plausible wrong
// answers fail: T^2 forgotten or applied to the gradient unchanged, the KL reversed, the
// student not softened, the teacher's entropy left in, a sum instead of a mean; one scale for
// the whole tensor, truncation or ties away from zero, a row of zeros; the mask's groups taken
// along the output dimension, signed values ranked instead of magnitudes. Single process: built on
// the trainee's exercises (bazel test //day4_large_models:compress_check) and on the solutions
// (//solutions/day4_large_models:compress_check).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "day4_large_models/exercises.h"

namespace day4 {
namespace {

using course::Shape;

struct Logits {
  int64_t rows = 0, classes = 0;
  std::vector<double> values;  // row-major
  double at(int64_t i, int64_t c) const { return values[static_cast<size_t>(i * classes + c)]; }
};

Logits random_logits(int64_t rows, int64_t classes, double spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, spread);
  Logits l{rows, classes, {}};
  for (int64_t k = 0; k < rows * classes; ++k) l.values.push_back(normal(rng));
  return l;
}

Tensor to_tensor(const Logits& l) {
  const std::vector<float> values(l.values.begin(), l.values.end());
  return Tensor::from_vector(values, Shape{l.rows, l.classes});
}

// log softmax(row i / t)[c], in double.
double log_softmax(const Logits& l, int64_t i, int64_t c, double t) {
  double top = l.at(i, 0) / t;
  for (int64_t k = 1; k < l.classes; ++k) top = std::max(top, l.at(i, k) / t);
  double sum = 0;
  for (int64_t k = 0; k < l.classes; ++k) sum += std::exp(l.at(i, k) / t - top);
  return l.at(i, c) / t - top - std::log(sum);
}

struct Reference {
  double loss, kl, cross_entropy;
};

Reference reference(const Logits& student, const Logits& teacher, const std::vector<int64_t>& y,
                    double t, double alpha) {
  double kl = 0, ce = 0;
  for (int64_t i = 0; i < student.rows; ++i) {
    for (int64_t c = 0; c < student.classes; ++c) {
      const double log_p = log_softmax(teacher, i, c, t);
      kl += std::exp(log_p) * (log_p - log_softmax(student, i, c, t));
    }
    ce -= log_softmax(student, i, y[static_cast<size_t>(i)], 1.0);
  }
  kl /= static_cast<double>(student.rows);
  ce /= static_cast<double>(student.rows);
  return {alpha * t * t * kl + (1 - alpha) * ce, kl, ce};
}

struct Case {
  double temperature, alpha;
};

class TP4_19 : public ::testing::TestWithParam<Case> {};

TEST_P(TP4_19, LossAndGradientMatchTheFormula) {
  const auto [t, alpha] = GetParam();
  const Logits student = random_logits(6, 7, 2.0, 1), teacher = random_logits(6, 7, 3.0, 2);
  const std::vector<int64_t> y = {0, 3, 6, 2, 2, 5};
  const DistillationLoss got =
      distillation_loss(to_tensor(student), to_tensor(teacher), Tensor::from_vector(y, Shape{6}),
                        static_cast<float>(t), static_cast<float>(alpha));
  const Reference want = reference(student, teacher, y, t, alpha);
  EXPECT_NEAR(got.kl, want.kl, 1e-5 + 1e-4 * want.kl) << "the KL, unweighted";
  EXPECT_NEAR(got.cross_entropy, want.cross_entropy, 1e-4) << "the cross-entropy, unweighted";
  EXPECT_NEAR(got.loss, want.loss, 1e-4 * std::max(1.0, want.loss))
      << "alpha T^2 KL + (1 - alpha) CE at T = " << t << ", alpha = " << alpha;
  ASSERT_TRUE(got.logits_grad.defined());
  ASSERT_EQ(got.logits_grad.shape(), (Shape{6, 7}));
  const std::vector<float> grad = got.logits_grad.to_vector<float>();
  const double h = 1e-5;
  for (size_t k = 0; k < student.values.size(); ++k) {
    Logits up = student, down = student;
    up.values[k] += h;
    down.values[k] -= h;
    const double numeric =
        (reference(up, teacher, y, t, alpha).loss - reference(down, teacher, y, t, alpha).loss) /
        (2 * h);
    EXPECT_NEAR(grad[k], numeric, 1e-4 + 1e-3 * std::abs(numeric)) << "dL/dz_s at " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Temperatures, TP4_19,
                         ::testing::Values(Case{4.0, 0.9}, Case{2.0, 0.5}, Case{1.0, 0.3},
                                           Case{8.0, 1.0}));

TEST(TP4_19ByHand, AStudentAgreeingWithItsTeacherLearnsOnlyFromTheLabels) {
  // Two classes, equal logits everywhere: the KL is 0 and CE = log 2; the soft term's gradient
  // is zero, the hard one's (softmax - one-hot) / N = (-0.5, 0.5) / 2 per row, times 1 - alpha.
  const Tensor same = Tensor::from_vector(std::vector<float>{0, 0, 0, 0}, Shape{2, 2});
  const Tensor labels = Tensor::from_vector(std::vector<int64_t>{0, 0}, Shape{2});
  const DistillationLoss d = distillation_loss(same, same, labels, 4.0f, 0.75f);
  EXPECT_NEAR(d.kl, 0.0f, 1e-6) << "the teacher's entropy must not be left in the KL";
  EXPECT_NEAR(d.loss, 0.25 * std::log(2.0), 1e-6);
  const std::vector<float> g = d.logits_grad.to_vector<float>();
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(g[2 * i], -0.0625f, 1e-6);
    EXPECT_NEAR(g[2 * i + 1], 0.0625f, 1e-6);
  }
}

TEST(TP4_19ByHand, AtTemperatureOneTheSoftGradientIsTheDifferenceOfTheSoftmaxes) {
  // alpha = 1, T = 1: dL/dz_s = (softmax(z_s) - softmax(z_t)) / N. One row: z_s = (0, ln 3) gives
  // (1/4, 3/4), z_t = (ln 3, 0) gives (3/4, 1/4); the gradient is (-1/2, 1/2) and the KL
  // 3/4 ln 3 + 1/4 ln(1/3) = ln(3) / 2.
  const float ln3 = std::log(3.0f);
  const DistillationLoss d =
      distillation_loss(Tensor::from_vector(std::vector<float>{0, ln3}, Shape{1, 2}),
                        Tensor::from_vector(std::vector<float>{ln3, 0}, Shape{1, 2}),
                        Tensor::from_vector(std::vector<int64_t>{1}, Shape{1}), 1.0f, 1.0f);
  EXPECT_NEAR(d.kl, ln3 / 2, 1e-6);
  EXPECT_NEAR(d.loss, ln3 / 2, 1e-6);
  const std::vector<float> g = d.logits_grad.to_vector<float>();
  EXPECT_NEAR(g[0], -0.5f, 1e-6);
  EXPECT_NEAR(g[1], 0.5f, 1e-6);
}

std::vector<float> random_rows(int64_t rows, int64_t row_size, uint32_t seed) {
  // Row o is of magnitude 4^o, so one scale for the whole tensor quantizes the small rows badly.
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w;
  for (int64_t o = 0; o < rows; ++o) {
    for (int64_t i = 0; i < row_size; ++i) w.push_back(normal(rng) * std::pow(4.0f, o));
  }
  return w;
}

TEST(TP4_20ByHand, OneScalePerRowRoundedToNearestEven) {
  // Row 0's largest magnitude 127 gives scale 1: 0.5, 1.5 and -2.5 are ties, to even: 0, 2, -2.
  // Row 1's 63.5 gives 0.5: 1 / 0.5 = 2, -0.75 / 0.5 = -1.5 -> -2, 0.2 / 0.5 = 0.4 -> 0. A row of
  // zeros gets scale 1 (not 0 / 127, which would divide by zero).
  const Tensor w = Tensor::from_vector(
      std::vector<float>{127, 0.5f, 1.5f, -2.5f, 63.5f, 1, -0.75f, 0.2f, 0, 0, 0, 0}, Shape{3, 4});
  const QuantizedWeight q = quantize_per_channel(w);
  ASSERT_EQ(q.values.dtype(), course::DType::kI8);
  ASSERT_EQ(q.values.shape(), w.shape());
  ASSERT_EQ(q.scales.shape(), Shape{3});
  EXPECT_EQ(q.scales.to_vector<float>(), (std::vector<float>{1, 0.5f, 1}))
      << "one scale per output channel, max |w| / 127";
  EXPECT_EQ(q.values.to_vector<int8_t>(),
            (std::vector<int8_t>{127, 0, 2, -2, 127, 2, -2, 0, 0, 0, 0, 0}))
      << "round to nearest, ties to even (std::nearbyint)";
}

TEST(TP4_20, MatchesADirectReferenceOnAConvolutionWeight) {
  const int64_t rows = 5, row_size = 3 * 3 * 3;
  const std::vector<float> w = random_rows(rows, row_size, 7);
  const QuantizedWeight q = quantize_per_channel(Tensor::from_vector(w, Shape{rows, 3, 3, 3}));
  const std::vector<float> scales = q.scales.to_vector<float>();
  const std::vector<int8_t> values = q.values.to_vector<int8_t>();
  ASSERT_EQ(scales.size(), static_cast<size_t>(rows));
  for (int64_t o = 0; o < rows; ++o) {
    float largest = 0;
    for (int64_t i = 0; i < row_size; ++i)
      largest = std::max(largest, std::fabs(w[o * row_size + i]));
    EXPECT_NEAR(scales[o], largest / 127, 1e-6 * largest) << "scale of output channel " << o;
    int top = 0;
    for (int64_t i = 0; i < row_size; ++i) {
      const size_t k = static_cast<size_t>(o * row_size + i);
      const double exact = w[k] / static_cast<double>(scales[o]);
      top = std::max(top, std::abs(static_cast<int>(values[k])));
      EXPECT_LE(std::abs(values[k] - exact), 0.5 + 1e-4)
          << "w[" << o << ", " << i << "] = " << w[k] << " is " << exact << " steps, got "
          << static_cast<int>(values[k]);
    }
    EXPECT_EQ(top, 127) << "row " << o << "'s largest weight should use the full range";
  }
}

TEST(TP4_21ByHand, KeepsTheTwoLargestMagnitudesOfEachGroupOfFour) {
  // Row 0: (1, -4, 3, 2) keeps -4 and 3; four equal zeros keep the first two. Row 1: (0.5, 0.1,
  // -0.2, -0.9) keeps 0.5 and -0.9 (magnitudes, not signed values); (5, 6, 7, 8) keeps 7 and 8.
  // Row 2, ties of signed values: (1, -3, 3, -3) keeps -3 and the 3 after it, the earlier two
  // of the three; (-2, 2, 2, -2) keeps the first two.
  const Tensor w = Tensor::from_vector(
      std::vector<float>{1,    -4,   3,     2,     0, 0, 0, 0,  //
                         0.5f, 0.1f, -0.2f, -0.9f, 5, 6, 7, 8, 1, -3, 3, -3, -2, 2, 2, -2},
      Shape{3, 8});
  const Tensor mask = mask_2_4(w);
  ASSERT_EQ(mask.dtype(), course::DType::kF32);
  ASSERT_EQ(mask.shape(), w.shape());
  EXPECT_EQ(mask.to_vector<float>(), (std::vector<float>{0, 1, 1, 0, 1, 1, 0, 0,  //
                                                         1, 0, 0, 1, 0, 0, 1, 1,  //
                                                         0, 1, 1, 0, 1, 1, 0, 0}))
      << "the two largest magnitudes of each group of four, the earlier of equal ones";
}

TEST(TP4_21, EveryGroupOfFourAlongTheInputDimensionKeepsItsTwoLargest) {
  // A convolution weight (8, 3, 2, 2): rows of 12 inputs, 3 groups each. Groups along the
  // output dimension (4 channels at one input) would not give 2 of 4 along the rows.
  const int64_t rows = 8, row_size = 12;
  const std::vector<float> w = random_rows(rows, row_size, 11);
  const std::vector<float> mask =
      mask_2_4(Tensor::from_vector(w, Shape{rows, 3, 2, 2})).to_vector<float>();
  ASSERT_EQ(mask.size(), w.size());
  for (size_t start = 0; start < w.size(); start += 4) {
    std::vector<size_t> order = {start, start + 1, start + 2, start + 3};
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return std::fabs(w[a]) > std::fabs(w[b]); });
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(mask[order[r]], r < 2 ? 1.0f : 0.0f)
          << "group at " << start << ": |w| = " << std::fabs(w[order[r]]) << " ranks " << r + 1;
    }
  }
  EXPECT_THROW(mask_2_4(Tensor::empty({2, 6})), course::Error)
      << "rows of 6 inputs cannot be cut into groups of 4";
}

}  // namespace
}  // namespace day4
