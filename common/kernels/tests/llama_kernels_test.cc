// Llama's kernels against references computed here in double: RMSNorm by its formula (and its
// input gradient against central differences of the formula), SwiGLU by its formula, grouped
// q|k|v by explicit head look-up and rotation matrices, its backward as the forward's adjoint,
// and the token embedding without a position table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/kernels/elementwise.h"
#include "common/kernels/embedding.h"
#include "common/kernels/grouped_qkv.h"
#include "common/kernels/layer_norm.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

using testing::accumulated;
using testing::all_close;
using testing::random_tensor;
using testing::rounded;
using testing::to_floats;

class LlamaKernelTest : public testing::DeviceCaseTest<DType> {
 protected:
  DType dtype() const { return value<0>(); }
};

// RMSNorm of one row in double: x / sqrt(mean(x^2) + eps) w.
std::vector<double> rms_row(const std::vector<double>& x, const std::vector<float>& w, double eps) {
  double squares = 0;
  for (double v : x) squares += v * v;
  const double r = 1.0 / std::sqrt(squares / static_cast<double>(x.size()) + eps);
  std::vector<double> y;
  for (size_t j = 0; j < x.size(); ++j) y.push_back(x[j] * r * w[j]);
  return y;
}

// Rows of 37 (not a multiple of the 32 lanes) and 3 (fewer than the lanes), signed values
// around zero and a row of large ones; the input gradient against central differences of
// sum(dy . y), the weight gradient against sum over rows of dy x r.
TEST_P(LlamaKernelTest, RmsNormMatchesItsFormulaAndItsDerivative) {
  const float eps = 1e-5f;
  for (const int64_t cols : {37, 3}) {
    SCOPED_TRACE(cols);
    const int64_t rows = 5;
    const auto x = random_tensor({rows, cols}, dtype(), device(), 21, -3.0f, 3.0f);
    const auto w = random_tensor({cols}, DType::kF32, device(), 22, 0.5f, 1.5f);
    const auto dy = random_tensor({rows, cols}, dtype(), device(), 23);
    LayerNormSaved saved;
    const Tensor y = rms_norm_forward(x.tensor, w.tensor, eps, saved);
    EXPECT_FALSE(saved.mean.defined());
    std::vector<double> expected, dx_expected, dw_expected(cols, 0.0);
    for (int64_t i = 0; i < rows; ++i) {
      std::vector<double> row(x.values.begin() + i * cols, x.values.begin() + (i + 1) * cols);
      const std::vector<double> out = rms_row(row, w.values, eps);
      expected.insert(expected.end(), out.begin(), out.end());
      const auto loss = [&](const std::vector<double>& v) {
        const std::vector<double> o = rms_row(v, w.values, eps);
        double l = 0;
        for (int64_t j = 0; j < cols; ++j) l += dy.values[i * cols + j] * o[j];
        return l;
      };
      for (int64_t j = 0; j < cols; ++j) {
        std::vector<double> up = row, down = row;
        up[j] += 1e-6;
        down[j] -= 1e-6;
        dx_expected.push_back((loss(up) - loss(down)) / 2e-6);
        dw_expected[j] += dy.values[i * cols + j] * out[j] / w.values[j];
      }
    }
    EXPECT_TRUE(all_close(to_floats(y), rounded(expected, dtype()), accumulated(dtype())));
    Tensor dw = zeros({cols}, DType::kF32, device());
    const Tensor dx = rms_norm_backward(dy.tensor, x.tensor, w.tensor, saved, dw);
    EXPECT_TRUE(all_close(to_floats(dx), rounded(dx_expected, dtype()), accumulated(dtype())));
    std::vector<float> dw_float(dw_expected.begin(), dw_expected.end());
    EXPECT_TRUE(all_close(to_floats(dw), dw_float, accumulated(dtype())));
  }
}

// silu(g) u with gates from -12 to 12 (sigmoid saturating both ways) and its two gradients.
TEST_P(LlamaKernelTest, SwigluMatchesItsFormulaAndDerivatives) {
  const int64_t rows = 3, width = 11;
  const auto x = random_tensor({rows, 2 * width}, dtype(), device(), 24, -12.0f, 12.0f);
  const auto dy = random_tensor({rows, width}, dtype(), device(), 25);
  std::vector<double> y, dx(rows * 2 * width);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < width; ++j) {
      const double g = x.values[i * 2 * width + j], u = x.values[i * 2 * width + width + j];
      const double s = 1.0 / (1.0 + std::exp(-g)), d = dy.values[i * width + j];
      y.push_back(g * s * u);
      dx[i * 2 * width + j] = d * u * (s + g * s * (1.0 - s));
      dx[i * 2 * width + width + j] = d * g * s;
    }
  EXPECT_TRUE(
      all_close(to_floats(swiglu_forward(x.tensor)), rounded(y, dtype()), accumulated(dtype())));
  EXPECT_TRUE(all_close(to_floats(swiglu_backward(dy.tensor, x.tensor)), rounded(dx, dtype()),
                        accumulated(dtype())));
  if (device().is_cpu()) {
    EXPECT_THAT(testing::error_of([&] {
                  swiglu_forward(zeros({2, 3}, dtype(), device()));
                }),
                ::testing::HasSubstr("(..., 2F)"));
  }
}

// The grouped forward by look-up: query head h reads input head h, key and value heads read
// their group's (h / (H / G)); queries and keys turned by the 2x2 rotation of angle
// t theta^(-2i/D), computed in double.
std::vector<double> grouped_reference(const std::vector<float>& x, int64_t B, int64_t T,
                                      const GroupedHeads& g) {
  const int64_t H = g.heads, G = g.kv_heads, D = g.head_dim, group = H / G;
  std::vector<double> out(B * T * 3 * H * D);
  for (int64_t bt = 0; bt < B * T; ++bt)
    for (int which = 0; which < 3; ++which)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t source = which == 0 ? h : H + (which - 1) * G + h / group;
        for (int64_t i = 0; i < D / 2; ++i) {
          const double a = x[(bt * (H + 2 * G) + source) * D + 2 * i];
          const double b = x[(bt * (H + 2 * G) + source) * D + 2 * i + 1];
          const double angle =
              which < 2 && g.rope_theta > 0
                  ? static_cast<double>(bt % T) * std::pow(static_cast<double>(g.rope_theta),
                                                           -2.0 * static_cast<double>(i) / D)
                  : 0.0;
          const int64_t at = ((bt * 3 + which) * H + h) * D + 2 * i;
          out[at] = a * std::cos(angle) - b * std::sin(angle);
          out[at + 1] = a * std::sin(angle) + b * std::cos(angle);
        }
      }
  return out;
}

// H = 6 query heads over G = 2 and G = 6 (plain multi-head) key/value heads, T = 9 positions
// (angles past 2 pi at theta 10), and no rotation at all; backward as the adjoint of the
// linear forward: <forward(x), d> = <x, backward(d)> for random x and d, and backward of a
// one-hot gradient on a key of the last group sums its group's heads.
TEST_P(LlamaKernelTest, GroupedQkvLooksUpRotatesAndIsAdjointToItsBackward) {
  const int64_t B = 2, T = 9, D = 4;
  for (const GroupedHeads g : {GroupedHeads{6, 2, D, 10.0f}, GroupedHeads{6, 6, D, 500000.0f},
                               GroupedHeads{6, 3, D, 0.0f}}) {
    SCOPED_TRACE(::testing::Message() << g.heads << "/" << g.kv_heads << " theta " << g.rope_theta);
    const auto x = random_tensor({B, T, g.width()}, dtype(), device(), 26, -2.0f, 2.0f);
    const Tensor rotation = rotation_table(T, g, device());
    const Tensor packed = grouped_qkv_forward(x.tensor, g, rotation);
    ASSERT_EQ(packed.shape(), Shape({B, T, 3 * g.heads * D}));
    EXPECT_TRUE(all_close(to_floats(packed), rounded(grouped_reference(x.values, B, T, g), dtype()),
                          accumulated(dtype())));
    const auto d = random_tensor(packed.shape(), dtype(), device(), 27);
    const std::vector<float> forward = to_floats(packed),
                             adjoint = to_floats(grouped_qkv_backward(d.tensor, g, rotation));
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < forward.size(); ++i) lhs += double(forward[i]) * d.values[i];
    for (size_t i = 0; i < adjoint.size(); ++i) rhs += double(adjoint[i]) * x.values[i];
    EXPECT_NEAR(lhs, rhs, 0.05 * (1.0 + std::abs(lhs))) << "backward is not the adjoint";
  }
}

TEST_P(LlamaKernelTest, GroupedQkvBackwardSumsAGroupsHeads) {
  if (dtype() != DType::kF32) GTEST_SKIP() << "exact sums of ones";
  const GroupedHeads g{4, 2, 2, 0.0f};  // heads 2 and 3 share key/value head 1
  std::vector<float> d(1 * 1 * 3 * 4 * 2, 0.0f);
  for (int64_t h : {2, 3}) d[(1 * 4 + h) * 2] = 1.0f;  // key heads 2 and 3, element 0
  d[(2 * 4 + 1) * 2 + 1] = 5.0f;                       // value head 1 (group 0), element 1
  const std::vector<float> dx =
      to_floats(grouped_qkv_backward(Tensor::from_vector(d, {1, 1, 24}, device()), g, Tensor()));
  std::vector<float> expected(16, 0.0f);  // q 4 heads | k 2 | v 2, of 2 each
  expected[(4 + 1) * 2] = 2.0f;           // key head 1 gets both
  expected[(4 + 2 + 0) * 2 + 1] = 5.0f;   // value head 0
  EXPECT_EQ(dx, expected);
}

TEST(GroupedHeads, RefusesShapesThatDoNotGroupOrTurn) {
  EXPECT_THAT(testing::error_of([] {
                check_grouped_heads({6, 4, 4, 1.0f});
              }),
              ::testing::HasSubstr("4 key/value heads to divide its 6 query heads"));
  EXPECT_THAT(testing::error_of([] {
                check_grouped_heads({4, 2, 3, 1.0f});
              }),
              ::testing::HasSubstr("head size 3 must be even"));
  const GroupedHeads turned{2, 1, 4, 1.0f};  // (B, T, 16), pairs of 4: (T, 2, 2) tables
  EXPECT_THAT(
      testing::error_of([&] {
        grouped_qkv_forward(zeros({1, 2, 10}), turned, rotation_table(2, turned, Device::cpu()));
      }),
      ::testing::HasSubstr("(B, T, 16)"));
  // The table of another length, none, or one where nothing turns.
  EXPECT_THAT(
      testing::error_of([&] {
        grouped_qkv_forward(zeros({1, 2, 16}), turned, rotation_table(3, turned, Device::cpu()));
      }),
      ::testing::HasSubstr("(2, 2, 2) rotation table"));
  EXPECT_THAT(testing::error_of([&] {
                grouped_qkv_backward(zeros({1, 2, 24}), turned, Tensor());
              }),
              ::testing::HasSubstr("(2, 2, 2) rotation table"));
  const GroupedHeads unturned{2, 1, 4, 0.0f};
  EXPECT_FALSE(rotation_table(2, unturned, Device::cpu()).defined());
  EXPECT_THAT(
      testing::error_of([&] {
        grouped_qkv_forward(zeros({1, 2, 16}), unturned, rotation_table(2, turned, Device::cpu()));
      }),
      ::testing::HasSubstr("unrotated heads take no rotation table"));
}

TEST_P(LlamaKernelTest, TokenEmbeddingWithoutPositionTable) {
  if (dtype() != DType::kF32) GTEST_SKIP() << "tables and outputs are f32";
  const auto wte = random_tensor({5, 3}, DType::kF32, device(), 28);
  const std::vector<int32_t> ids = {4, 1, 1, 0, 4, 2};
  const Tensor tokens = Tensor::from_vector(ids, {1, 6}, device());  // longer than no table
  std::vector<float> expected;
  for (int32_t id : ids)
    for (int64_t c = 0; c < 3; ++c) expected.push_back(wte.values[id * 3 + c]);
  EXPECT_EQ(to_floats(embedding_forward(tokens, wte.tensor, Tensor())), expected);
  Tensor dwte = zeros({5, 3}, DType::kF32, device()), no_table;
  embedding_backward(embedding_forward(tokens, wte.tensor, Tensor()), tokens, dwte, no_table);
  std::vector<float> dwte_expected(15, 0.0f);
  for (int32_t id : ids)
    for (int64_t c = 0; c < 3; ++c) dwte_expected[id * 3 + c] += wte.values[id * 3 + c];
  EXPECT_TRUE(all_close(to_floats(dwte), dwte_expected, DType::kF32));
}

COURSE_INSTANTIATE_DEVICE_CASES(LlamaKernelTest,
                                ::testing::Values(DType::kF32, DType::kF16, DType::kBF16));

}  // namespace
}  // namespace course
