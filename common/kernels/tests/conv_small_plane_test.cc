// The weight gradient of convolutions with small output planes (taken on the CPU as one sgemm
// over the output positions, conv2d_gemm_weights.cc) against sums in double computed here: 1 x
// 1, 2 x 1 and 2 x 2 planes, strides 1 and 2, padding 0 to 2 (windows reaching past every edge),
// kernels of 1 and 3, an odd batch and channel counts, NCHW and channels-last, added onto a
// non-zero gradient; f16 operands through the same path. The path is taken exactly where it is
// meant to be: small planes of ungrouped convolutions.
#include <gtest/gtest.h>

#include "common/kernels/conv2d.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

struct Geometry {
  int64_t height, width, kernel;
  Conv2dShape conv;
};

// prior + sum over (n, i, j) of dy[n, o, i, j] x[n, c, i s - p + ki, j s - p + kj], in double.
std::vector<double> weight_gradient_in_double(const std::vector<float>& x, const Shape& xs,
                                              const std::vector<float>& dy, const Shape& ys,
                                              const std::vector<float>& prior, int64_t k,
                                              Conv2dShape conv) {
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3], o = ys[1], oh = ys[2], ow = ys[3];
  std::vector<double> dw(prior.begin(), prior.end());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t ic = 0; ic < c; ++ic)
        for (int64_t ki = 0; ki < k; ++ki)
          for (int64_t kj = 0; kj < k; ++kj)
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j) {
                const int64_t y = i * conv.stride - conv.padding + ki;
                const int64_t xx = j * conv.stride - conv.padding + kj;
                if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
                dw[((oc * c + ic) * k + ki) * k + kj] +=
                    double(dy[((b * o + oc) * oh + i) * ow + j]) *
                    x[((b * c + ic) * h + y) * w + xx];
              }
  return dw;
}

class SmallPlane : public ::testing::TestWithParam<std::tuple<Geometry, MemoryFormat>> {};

TEST_P(SmallPlane, WeightGradientMatchesSumsInDouble) {
  const auto [g, format] = GetParam();
  const Shape xs{5, 7, g.height, g.width};
  const auto x = testing::random_tensor(xs, DType::kF32, Device::cpu(), 1);
  const auto prior =
      testing::random_tensor({6, 7, g.kernel, g.kernel}, DType::kF32, Device::cpu(), 3);
  const Shape ys = conv2d_output_shape(xs, prior.tensor.shape(), g.conv);
  ASSERT_LE(ys[2] * ys[3], 4);
  ASSERT_TRUE(detail::gemm_weight_gradient_pays(ys, g.conv));
  const auto dy = testing::random_tensor(ys, DType::kF32, Device::cpu(), 4);
  const std::vector<float> want = testing::rounded(
      weight_gradient_in_double(x.values, xs, dy.values, ys, prior.values, g.kernel, g.conv),
      DType::kF32);

  Tensor dw = prior.tensor.clone();
  conv2d_backward_weights_add(to_memory_format(dy.tensor, format),
                              to_memory_format(x.tensor, format), dw, g.conv);
  EXPECT_TRUE(testing::all_close(testing::to_floats(dw), want, {.atol = 1e-5, .rtol = 1e-5}));

  // f16 operands: widened, the same product, added and rounded back once.
  const auto half = [](const Tensor& t) { return cast(t, DType::kF16); };
  const auto widened = [](const Tensor& t) { return testing::to_floats(cast(t, DType::kF32)); };
  Tensor dw16 = half(prior.tensor);
  const std::vector<float> want16 = testing::rounded(
      weight_gradient_in_double(widened(half(x.tensor)), xs, widened(half(dy.tensor)), ys,
                                widened(dw16), g.kernel, g.conv),
      DType::kF16);
  conv2d_backward_weights_add(to_memory_format(half(dy.tensor), format),
                              to_memory_format(half(x.tensor), format), dw16, g.conv);
  EXPECT_TRUE(testing::all_close(widened(dw16), want16, {.atol = 1e-2, .rtol = 4e-3}));
}

TEST(SmallPlane, TakenForUngroupedPlanesOfFourOrFewerPositions) {
  EXPECT_TRUE(detail::gemm_weight_gradient_pays({32, 512, 2, 2}, {.stride = 1, .padding = 1}));
  EXPECT_TRUE(detail::gemm_weight_gradient_pays({3, 8, 1, 4}, {}));
  EXPECT_FALSE(detail::gemm_weight_gradient_pays({32, 256, 4, 4}, {.stride = 1, .padding = 1}));
  EXPECT_FALSE(detail::gemm_weight_gradient_pays({3, 8, 1, 5}, {}));
  EXPECT_FALSE(detail::gemm_weight_gradient_pays({3, 8, 2, 2}, {.groups = 2}));
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, SmallPlane,
    ::testing::Combine(
        // Input height, width, kernel, stride and padding; the output plane in the comments.
        ::testing::Values(Geometry{2, 2, 3, {.stride = 1, .padding = 1}},   // 2 x 2 (ResNet-18)
                          Geometry{1, 2, 3, {.stride = 1, .padding = 1}},   // 1 x 2
                          Geometry{3, 4, 3, {.stride = 2, .padding = 1}},   // 2 x 2
                          Geometry{4, 3, 1, {.stride = 2, .padding = 0}},   // 2 x 2, pointwise
                          Geometry{1, 1, 3, {.stride = 2, .padding = 2}},   // 2 x 2, mostly padding
                          Geometry{3, 4, 3, {.stride = 1, .padding = 0}}),  // 1 x 2
        ::testing::Values(MemoryFormat::kContiguous, MemoryFormat::kChannelsLast)));

}  // namespace
}  // namespace course
