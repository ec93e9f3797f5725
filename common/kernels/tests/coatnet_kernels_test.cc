// CoAtNet's kernels against references computed here in double, on every device, dtype and (for
// maps) memory format: grouped and depthwise convolutions by their defining sums (all three
// passes), 2x2 average pooling of odd-sized maps, the squeeze-excitation's channel scale and a
// per-channel bias with their gradients, the relative position bias by explicit offsets (its
// backward as the forward's adjoint), and attention with a score bias (its output, its inputs'
// and the bias's gradients) against a direct softmax.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/kernels/attention.h"
#include "common/kernels/avg_pool2.h"
#include "common/kernels/channel_scale.h"
#include "common/kernels/conv2d.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/kernels/math_mode.h"
#include "common/kernels/relative_position.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

using testing::accumulated;
using testing::all_close;
using testing::random_tensor;
using testing::rounded;
using testing::to_floats;

// (N, C, H, W) logical index.
struct Nchw {
  int64_t n, c, h, w;
  int64_t at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return ((in * c + ic) * h + ih) * w + iw;
  }
};

class MapKernelTest : public testing::DeviceCaseTest<DType, MemoryFormat> {
 protected:
  DType dtype() const { return value<0>(); }
  MemoryFormat format() const { return value<1>(); }
  // A contiguous f32 test tensor on this case's device, dtype and format.
  Tensor on_device(const Tensor& t) const {
    return to_memory_format(cast(t, dtype()).to(device()), format());
  }
  static std::vector<float> back(const Tensor& t) {
    return to_floats(
        cast(to_memory_format(t, MemoryFormat::kContiguous), DType::kF32).to(Device::cpu()));
  }
};

// The three passes of a convolution by its sums: y, dx = the adjoint applied to dy, dw.
struct ConvReference {
  std::vector<double> y, dx, dw;
};

ConvReference reference_conv(const std::vector<float>& x, Nchw xs, const std::vector<float>& w,
                             int64_t out_channels, int64_t k, Conv2dShape conv,
                             const std::vector<float>& dy, Nchw ys) {
  const int64_t group_in = xs.c / conv.groups, group_out = out_channels / conv.groups;
  ConvReference r{std::vector<double>(ys.n * ys.c * ys.h * ys.w, 0.0),
                  std::vector<double>(x.size(), 0.0), std::vector<double>(w.size(), 0.0)};
  for (int64_t n = 0; n < ys.n; ++n)
    for (int64_t o = 0; o < out_channels; ++o)
      for (int64_t i = 0; i < ys.h; ++i)
        for (int64_t j = 0; j < ys.w; ++j)
          for (int64_t c = 0; c < group_in; ++c)
            for (int64_t a = 0; a < k; ++a)
              for (int64_t b = 0; b < k; ++b) {
                const int64_t ih = i * conv.stride - conv.padding + a;
                const int64_t iw = j * conv.stride - conv.padding + b;
                if (ih < 0 || ih >= xs.h || iw < 0 || iw >= xs.w) continue;
                const int64_t xi = xs.at(n, o / group_out * group_in + c, ih, iw);
                const int64_t wi = ((o * group_in + c) * k + a) * k + b;
                const int64_t yi = ys.at(n, o, i, j);
                r.y[yi] += static_cast<double>(x[xi]) * w[wi];
                r.dx[xi] += static_cast<double>(dy[yi]) * w[wi];
                r.dw[wi] += static_cast<double>(dy[yi]) * x[xi];
              }
  return r;
}

// 12 channels in 3 groups (4 -> 2 each), a depthwise 3x3 (stride 2 over an odd 9x7 map) and a
// grouped strided 1x1 (oneDNN's subsampled weight-gradient path).
TEST_P(MapKernelTest, GroupedConvolutionsMatchTheirSums) {
  const ScopedTf32Switches strict({.conv = false});  // f32 in f32, as the tolerance assumes
  struct Case {
    int64_t in, out, k;
    Conv2dShape conv;
  };
  for (const Case& c : {Case{12, 6, 3, {.stride = 1, .padding = 1, .groups = 3}},
                        Case{10, 10, 3, {.stride = 2, .padding = 1, .groups = 10}},
                        Case{8, 12, 1, {.stride = 2, .padding = 0, .groups = 4}}}) {
    SCOPED_TRACE(c.conv.groups);
    const Nchw xs{3, c.in, 9, 7};
    const auto x = random_tensor({xs.n, xs.c, xs.h, xs.w}, dtype(), Device::cpu(), 31, -2.0f, 2.0f);
    const auto w =
        random_tensor({c.out, c.in / c.conv.groups, c.k, c.k}, dtype(), Device::cpu(), 32);
    const Shape y_shape = conv2d_output_shape(x.tensor.shape(), w.tensor.shape(), c.conv);
    const Nchw ys{y_shape[0], y_shape[1], y_shape[2], y_shape[3]};
    const auto dy = random_tensor(y_shape, dtype(), Device::cpu(), 33);
    const ConvReference want =
        reference_conv(x.values, xs, w.values, c.out, c.k, c.conv, dy.values, ys);
    const Tensor xd = on_device(x.tensor), dyd = on_device(dy.tensor);
    const Tensor wd = w.tensor.to(device());
    Tensor dw = zeros(w.tensor.shape(), dtype(), device());
    const Tensor y = conv2d_forward(xd, wd, c.conv);
    EXPECT_EQ(y.memory_format(), format());
    const Tensor dx = conv2d_backward_data(dyd, wd, xd, c.conv);
    conv2d_backward_weights_add(dyd, xd, dw, c.conv);
    const testing::Tolerance tol = accumulated(dtype());
    EXPECT_TRUE(all_close(back(y), rounded(want.y, dtype()), tol)) << "forward";
    EXPECT_TRUE(all_close(back(dx), rounded(want.dx, dtype()), tol)) << "backward data";
    EXPECT_TRUE(all_close(back(dw), rounded(want.dw, dtype()), tol)) << "backward weights";
  }
}

TEST(GroupedConvolution, RefusesChannelsThatDoNotSplit) {
  EXPECT_THROW(conv2d_output_shape({1, 6, 5, 5}, {4, 3, 3, 3}, {.groups = 3}), Error);  // 9 != 6
  EXPECT_THROW(conv2d_output_shape({1, 6, 5, 5}, {4, 2, 3, 3}, {.groups = 3}), Error);  // 4 % 3
  EXPECT_EQ(conv2d_output_shape({1, 6, 5, 5}, {6, 2, 3, 3}, {.padding = 1, .groups = 3}),
            Shape({1, 6, 5, 5}));
}

// A 7x9 map: the last row is dropped (floor), as PyTorch's AvgPool2d(2).
TEST_P(MapKernelTest, AvgPool2AveragesEachWindowAndDropsAnOddEdge) {
  const Nchw xs{2, 3, 7, 9}, ys{2, 3, 3, 4};
  const auto x = random_tensor({xs.n, xs.c, xs.h, xs.w}, dtype(), Device::cpu(), 41, -3.0f, 3.0f);
  const auto dy = random_tensor({ys.n, ys.c, ys.h, ys.w}, dtype(), Device::cpu(), 42);
  std::vector<double> y(ys.n * ys.c * ys.h * ys.w, 0.0), dx(x.values.size(), 0.0);
  for (int64_t n = 0; n < ys.n; ++n)
    for (int64_t c = 0; c < ys.c; ++c)
      for (int64_t i = 0; i < 2 * ys.h; ++i)
        for (int64_t j = 0; j < 2 * ys.w; ++j) {
          y[ys.at(n, c, i / 2, j / 2)] += 0.25 * x.values[xs.at(n, c, i, j)];
          dx[xs.at(n, c, i, j)] = 0.25 * dy.values[ys.at(n, c, i / 2, j / 2)];
        }
  const Tensor xd = on_device(x.tensor);
  const Tensor out = avg_pool2_forward(xd);
  EXPECT_EQ(out.memory_format(), format());
  EXPECT_TRUE(all_close(back(out), rounded(y, dtype()), accumulated(dtype())));
  const Tensor grad = avg_pool2_backward(on_device(dy.tensor), xd);
  EXPECT_TRUE(all_close(back(grad), rounded(dx, dtype()), accumulated(dtype())));
  EXPECT_THROW(avg_pool2_forward(
                   on_device(random_tensor({1, 1, 1, 4}, DType::kF32, Device::cpu(), 1).tensor)),
               Error);
}

// y = x s[n, c] + b[c] with its gradients: dx = dy s, ds = sum over the plane of dy x, db = sum
// over batch and plane of dy.
TEST_P(MapKernelTest, ChannelScaleAndBiasMatchTheirFormulas) {
  const Nchw xs{3, 5, 4, 7};
  const auto x = random_tensor({xs.n, xs.c, xs.h, xs.w}, dtype(), Device::cpu(), 51, -2.0f, 2.0f);
  const auto s = random_tensor({xs.n, xs.c}, DType::kF32, Device::cpu(), 52, -1.5f, 1.5f);
  const auto b = random_tensor({xs.c}, DType::kF32, Device::cpu(), 53);
  const auto dy = random_tensor(x.tensor.shape(), dtype(), Device::cpu(), 54);
  std::vector<double> y(x.values.size()), dx(x.values.size()), ds(xs.n * xs.c, 0.0),
      db(xs.c, 0.5);  // the bias gradient accumulates onto 0.5
  for (int64_t i = 0; i < static_cast<int64_t>(x.values.size()); ++i) {
    const int64_t plane = i / (xs.h * xs.w), c = plane % xs.c;
    y[i] = static_cast<double>(x.values[i]) * s.values[plane] + b.values[c];
    dx[i] = static_cast<double>(dy.values[i]) * s.values[plane];
    ds[plane] += static_cast<double>(dy.values[i]) * x.values[i];
    db[c] += dy.values[i];
  }
  const Tensor xd = on_device(x.tensor), dyd = on_device(dy.tensor);
  const Tensor sd = s.tensor.to(device());
  Tensor out = channel_scale_forward(xd, sd);
  add_channel_bias_(out, b.tensor.to(device()));
  // The scale is rounded to the dtype with x before the bias: the reference rounds once.
  EXPECT_TRUE(all_close(back(out), rounded(y, dtype()), accumulated(dtype())));
  Tensor scale_grad = zeros({xs.n, xs.c}, DType::kF32, device());
  const Tensor grad = channel_scale_backward(dyd, xd, sd, scale_grad);
  EXPECT_TRUE(all_close(back(grad), rounded(dx, dtype()), accumulated(dtype())));
  EXPECT_TRUE(all_close(back(scale_grad), rounded(ds, DType::kF32), accumulated(dtype())));
  Tensor bias_grad =
      Tensor::from_vector<float>(std::vector<float>(xs.c, 0.5f), {xs.c}).to(device());
  add_channel_bias_grad_(dyd, bias_grad);
  EXPECT_TRUE(all_close(back(bias_grad), rounded(db, DType::kF32), accumulated(dtype())));
}

COURSE_INSTANTIATE_DEVICE_CASES(MapKernelTest,
                                ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                                ::testing::Values(MemoryFormat::kContiguous,
                                                  MemoryFormat::kChannelsLast));

class RelativeAttentionKernelTest : public testing::DeviceCaseTest<DType> {
 protected:
  DType dtype() const { return value<0>(); }
};

// A 3x4 grid (not square, so rows and columns cannot be confused), 2 heads: each bias entry is
// the table's at the pair's (row, column) offset; the backward is the adjoint,
// <bias(t), g> = <t, bias^T(g)>, checked against the sum over pairs computed here.
TEST_P(RelativeAttentionKernelTest, RelativeBiasReadsEachPairsOffset) {
  const int64_t heads = 2, h = 3, w = 4, t = h * w, offsets = (2 * h - 1) * (2 * w - 1);
  ASSERT_EQ(relative_offsets(h, w), offsets);
  const auto table = random_tensor({heads, offsets}, DType::kF32, device(), 61);
  const auto g = random_tensor({heads, t, t}, DType::kF32, device(), 62);
  std::vector<double> bias(heads * t * t), table_grad(heads * offsets, 0.25);
  for (int64_t hd = 0; hd < heads; ++hd)
    for (int64_t q = 0; q < t; ++q)
      for (int64_t k = 0; k < t; ++k) {
        const int64_t dy = q / w - k / w, dx = q % w - k % w;
        const int64_t entry = hd * offsets + (dy + h - 1) * (2 * w - 1) + (dx + w - 1);
        bias[(hd * t + q) * t + k] = table.values[entry];
        table_grad[entry] += g.values[(hd * t + q) * t + k];
      }
  EXPECT_TRUE(all_close(to_floats(relative_position_bias(table.tensor, h, w)),
                        rounded(bias, DType::kF32), DType::kF32));
  Tensor grad =
      Tensor::from_vector<float>(std::vector<float>(heads * offsets, 0.25f), {heads, offsets})
          .to(device());
  relative_position_bias_backward(g.tensor, grad, h, w);
  EXPECT_TRUE(all_close(to_floats(grad), rounded(table_grad, DType::kF32), DType::kF32));
  EXPECT_THROW(relative_position_bias(table.tensor, h, w + 1), Error);
}

// softmax(q k^T / sqrt(D) + B) v per head in double; the gradients by the same formulas
// written out: dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(P dP)), dQ = dS K / sqrt(D),
// dK = dS^T Q / sqrt(D), dB = dS summed over the batch. B has large entries (+-4) so a bias
// left out, or added to the wrong head, fails.
TEST_P(RelativeAttentionKernelTest, AttentionWithAScoreBiasMatchesADirectSoftmax) {
  const int64_t B = 2, T = 5, H = 3, D = 4, C = H * D;
  const auto qkv = random_tensor({B, T, 3 * C}, dtype(), device(), 71, -1.5f, 1.5f);
  const auto bias = random_tensor({H, T, T}, DType::kF32, device(), 72, -4.0f, 4.0f);
  const auto dout = random_tensor({B, T, C}, dtype(), device(), 73);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const auto at = [&](int64_t b, int64_t t, int64_t part, int64_t h, int64_t d) {
    return ((b * T + t) * 3 + part) * C + h * D + d;  // q|k|v of (B, T, 3C)
  };
  std::vector<double> out(B * T * C, 0.0), dqkv(B * T * 3 * C, 0.0), dbias(H * T * T, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> p(T * T), dp(T * T, 0.0);
      for (int64_t i = 0; i < T; ++i) {
        double top = -1e300, total = 0.0;
        for (int64_t j = 0; j < T; ++j) {
          double s = bias.values[(h * T + i) * T + j];
          for (int64_t d = 0; d < D; ++d)
            s += scale * qkv.values[at(b, i, 0, h, d)] * qkv.values[at(b, j, 1, h, d)];
          p[i * T + j] = s;
          top = std::max(top, s);
        }
        for (int64_t j = 0; j < T; ++j) total += p[i * T + j] = std::exp(p[i * T + j] - top);
        for (int64_t j = 0; j < T; ++j) p[i * T + j] /= total;
      }
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j)
          for (int64_t d = 0; d < D; ++d) {
            const double go = dout.values[(b * T + i) * C + h * D + d];
            out[(b * T + i) * C + h * D + d] += p[i * T + j] * qkv.values[at(b, j, 2, h, d)];
            dqkv[at(b, j, 2, h, d)] += p[i * T + j] * go;
            dp[i * T + j] += go * qkv.values[at(b, j, 2, h, d)];
          }
      for (int64_t i = 0; i < T; ++i) {
        double row = 0.0;
        for (int64_t j = 0; j < T; ++j) row += p[i * T + j] * dp[i * T + j];
        for (int64_t j = 0; j < T; ++j) {
          const double ds = p[i * T + j] * (dp[i * T + j] - row);
          dbias[(h * T + i) * T + j] += ds;
          for (int64_t d = 0; d < D; ++d) {
            dqkv[at(b, i, 0, h, d)] += scale * ds * qkv.values[at(b, j, 1, h, d)];
            dqkv[at(b, j, 1, h, d)] += scale * ds * qkv.values[at(b, i, 0, h, d)];
          }
        }
      }
    }
  AttentionSaved saved;
  const Tensor y = attention_forward(qkv.tensor, H, /*causal=*/false, saved, &bias.tensor);
  Tensor bias_grad = zeros({H, T, T}, DType::kF32, device());
  const Tensor dx = attention_backward(dout.tensor, H, false, saved, &bias_grad);
  const testing::Tolerance tol = accumulated(dtype());
  EXPECT_TRUE(all_close(to_floats(y), rounded(out, dtype()), tol)) << "output";
  EXPECT_TRUE(all_close(to_floats(dx), rounded(dqkv, dtype()), tol)) << "d(qkv)";
  EXPECT_TRUE(all_close(to_floats(bias_grad), rounded(dbias, DType::kF32), tol)) << "d(bias)";
  EXPECT_THROW(attention_backward(dout.tensor, H, false, saved), Error);  // the bias's gradient
}

COURSE_INSTANTIATE_DEVICE_CASES(RelativeAttentionKernelTest,
                                ::testing::Values(DType::kF32, DType::kF16, DType::kBF16));

}  // namespace
}  // namespace course
