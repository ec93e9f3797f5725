// Batch norm on every device (on a GPU through cuDNN's graphs, counted): against a double
// reference in both layouts, with channels and planes of more than a warp's 32 lanes and not a
// multiple of it, and with its fused ReLU against batch norm then ReLU.
#include "common/kernels/batch_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/kernels/plan_cache.h"
#include "common/kernels/tests/cudnn_expectations.h"
#include "common/kernels/tests/layout_cases.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

using testing::random_tensor;
using testing::stored_bytes;
using testing::to_floats;

class BatchNorm : public testing::LayoutCaseTest {};

// y, dx, dgamma and dbeta of training-mode batch norm, in double, NCHW order.
struct BatchNormReference {
  std::vector<double> y, dx, dgamma, dbeta;
  std::vector<double> running_mean, running_var;  // from zeros, momentum 0.1 (unbiased variance)
};

BatchNormReference batch_norm_reference(const std::vector<float>& x, const std::vector<float>& dy,
                                        const std::vector<float>& gamma,
                                        const std::vector<float>& beta, int64_t n, int64_t c,
                                        int64_t hw, double eps) {
  BatchNormReference r{std::vector<double>(x.size()), std::vector<double>(x.size()),
                       std::vector<double>(c), std::vector<double>(c)};
  const double m = static_cast<double>(n * hw);
  for (int64_t ch = 0; ch < c; ++ch) {
    const auto at = [&](int64_t s, int64_t k) { return (s * c + ch) * hw + k; };
    double mean = 0, var = 0;
    for (int64_t s = 0; s < n; ++s)
      for (int64_t k = 0; k < hw; ++k) mean += x[at(s, k)] / m;
    for (int64_t s = 0; s < n; ++s)
      for (int64_t k = 0; k < hw; ++k) var += (x[at(s, k)] - mean) * (x[at(s, k)] - mean) / m;
    const double invstd = 1.0 / std::sqrt(var + eps);
    r.running_mean.push_back(0.1 * mean);
    r.running_var.push_back(0.1 * var * m / (m - 1));
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int64_t s = 0; s < n; ++s)
      for (int64_t k = 0; k < hw; ++k) {
        const double xhat = (x[at(s, k)] - mean) * invstd;
        r.y[at(s, k)] = xhat * gamma[ch] + beta[ch];
        sum_dy += dy[at(s, k)];
        sum_dy_xhat += dy[at(s, k)] * xhat;
      }
    r.dbeta[ch] = sum_dy;
    r.dgamma[ch] = sum_dy_xhat;
    for (int64_t s = 0; s < n; ++s)
      for (int64_t k = 0; k < hw; ++k) {
        const double xhat = (x[at(s, k)] - mean) * invstd;
        r.dx[at(s, k)] = gamma[ch] * invstd / m * (m * dy[at(s, k)] - sum_dy - xhat * sum_dy_xhat);
      }
  }
  return r;
}

bool close_to(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  std::vector<float> rounded(want.begin(), want.end());
  return testing::all_close(got, rounded, {tol, tol});
}

TEST_P(BatchNorm, BatchNormMatchesTheDoubleReference) {
  for (const Shape& shape : {Shape{5, 3, 7, 9}, Shape{3, 37, 2, 3}, Shape{2, 40, 1, 1}}) {
    SCOPED_TRACE(shape_str(shape));
    const int64_t n = shape[0], c = shape[1], hw = shape[2] * shape[3];
    const auto [x, x_values] = activations(shape, 1);
    const auto [dy, dy_values] = activations(shape, 2);
    const auto gamma = random_tensor({c}, DType::kF32, device(), 3, 0.5f, 2.0f);
    const auto beta = random_tensor({c}, DType::kF32, device(), 4);
    Tensor running_mean = zeros({c}, DType::kF32, device());
    Tensor running_var = zeros({c}, DType::kF32, device());
    Tensor dgamma = zeros({c}, DType::kF32, device()), dbeta = zeros({c}, DType::kF32, device());
    BatchNormSaved saved;
    const int64_t fused_before = cudnn_graph_executions();
    const Tensor y = batch_norm_train(x, gamma.tensor, beta.tensor, running_mean, running_var, 0.1f,
                                      1e-5f, saved);
    const Tensor dx = batch_norm_backward(dy, x, gamma.tensor, beta.tensor, saved, dgamma, dbeta);
    if (device().is_cuda()) {
      testing::expect_cudnn_graphs(testing::cudnn_samples_cover(x.dtype(), c),
                                   cudnn_graph_executions() - fused_before, 2);
    }
    const BatchNormReference ref =
        batch_norm_reference(x_values, dy_values, gamma.values, beta.values, n, c, hw, 1e-5);
    EXPECT_TRUE(close_to(nchw_values(y), ref.y, 1e-4));
    EXPECT_TRUE(close_to(nchw_values(dx), ref.dx, 1e-4));
    EXPECT_TRUE(close_to(to_floats(dgamma), ref.dgamma, 1e-3));
    EXPECT_TRUE(close_to(to_floats(dbeta), ref.dbeta, 1e-3));
    EXPECT_TRUE(close_to(to_floats(running_mean), ref.running_mean, 1e-5));
    EXPECT_TRUE(close_to(to_floats(running_var), ref.running_var, 1e-4));
  }
}

// Batch norm with its ReLU fused against batch norm, then ReLU (relu_forward, relu_backward),
// in f32 and bf16: byte for byte where the course's kernels run both (the CPU, the simulated
// device, a GPU where cuDNN has no engine for the fused graphs), to the dtype's tolerance where
// cuDNN's fused graphs ran (counted; asserted for channels-last bf16, the frontend's tested
// pattern), with the course's fused kernels beside it. Channels chosen to sit on the ReLU's
// edges: one shifted far below 0 (all masked), one far above (none), the rest random; where the
// course's kernels run alone also one constant (y exactly 0 everywhere, beta 0: all masked; a
// library's mean one ulp off would flip its signs) and one holding a NaN; the parameter
// gradients start non-zero (they accumulate).
TEST_P(BatchNorm, BatchNormWithItsFusedReluIsBatchNormThenRelu) {
  const int64_t n = 4, c = 37, h = 3, w = 5;
  const Shape shape{n, c, h, w};
  const bool course_kernels_only = !device().is_cuda();
  testing::TestTensor x_values = random_tensor(shape, DType::kF32, Device::cpu(), 11, -3, 5);
  std::vector<float> beta_values = random_tensor({c}, DType::kF32, Device::cpu(), 12).values;
  beta_values[1] = -50.0f;
  beta_values[2] = 50.0f;
  if (course_kernels_only) {
    for (int64_t k = 0; k < n * h * w; ++k) {
      const int64_t sample = k / (h * w), at = k % (h * w);
      x_values.values[(sample * c + 0) * h * w + at] = 1.5f;  // channel 0: constant
    }
    beta_values[0] = 0.0f;
    x_values.values[(2 * c + 3) * h * w + 4] = std::nanf("");
  }
  const auto gamma = random_tensor({c}, DType::kF32, device(), 13, 0.5f, 2.0f);
  const Tensor beta = Tensor::from_vector(beta_values, {c}).to(device());
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const auto in_layout = [&](const Tensor& t) {
      return cast(to_memory_format(t, format()), dtype).to(device());
    };
    const Tensor x = in_layout(Tensor::from_vector(x_values.values, shape));
    const Tensor dy = in_layout(random_tensor(shape, DType::kF32, Device::cpu(), 14, -2, 2).tensor);
    struct Result {
      Tensor y, dx, dgamma, dbeta, running_mean, running_var;
    };
    const auto filled = [&](double value) {
      Tensor t = zeros({c}, DType::kF32, device());
      fill_(t, value);
      return t;
    };
    const auto run = [&](bool fused, const ChannelSumReducer& reduce) {
      Result r{Tensor(), Tensor(), filled(0.25), filled(-0.5), filled(0.0), filled(1.0)};
      BatchNormSaved saved;
      const BatchNormActivation activation =
          fused ? BatchNormActivation::kRelu : BatchNormActivation::kNone;
      const Tensor normalised =
          batch_norm_train(x, gamma.tensor, beta, r.running_mean, r.running_var, 0.1f, 1e-5f, saved,
                           reduce, activation);
      r.y = fused ? normalised : relu_forward(normalised);
      r.dx = batch_norm_backward(fused ? dy : relu_backward(dy, r.y), x, gamma.tensor, beta, saved,
                                 r.dgamma, r.dbeta, reduce);
      return r;
    };
    // A reducer over one rank: the course's kernels, never cuDNN's graph.
    const ChannelSumReducer one_rank = [](const std::vector<Tensor*>&, int64_t count) {
      return count;
    };
    const int64_t graphs_before = cudnn_graph_executions();
    const Result fused = run(true, {});
    const int64_t graphs = cudnn_graph_executions() - graphs_before;
    if (cudnn_graphs_compiled() && device().is_cuda() && dtype == DType::kBF16 &&
        format() == MemoryFormat::kChannelsLast) {
      EXPECT_EQ(graphs, 2) << "cuDNN's two fused graphs";
    }
    const Result kernels = run(true, one_rank);
    const Result separate = run(false, one_rank);
    const auto fields = [](const Result& r) {
      return std::vector<Tensor>{r.y, r.dx, r.dgamma, r.dbeta, r.running_mean, r.running_var};
    };
    const std::vector<Tensor> got = fields(fused), course = fields(kernels),
                              want = fields(separate);
    for (size_t k = 0; k < want.size(); ++k) {
      SCOPED_TRACE(::testing::Message() << "output " << k << " (y, dx, dgamma, dbeta, running)");
      EXPECT_EQ(stored_bytes(course[k]), stored_bytes(want[k]));
      if (graphs > 0) {
        const testing::Tolerance tolerance = testing::accumulated(dtype);
        EXPECT_TRUE(testing::all_close(to_floats(got[k]), to_floats(want[k]), tolerance));
      } else {
        EXPECT_EQ(stored_bytes(got[k]), stored_bytes(want[k]));
      }
    }
    // The edges did what they should: channels 1 (and 0) have no gradient through the ReLU.
    const std::vector<float> dbeta = to_floats(kernels.dbeta);
    EXPECT_EQ(dbeta[1], -0.5f);
    EXPECT_NE(dbeta[2], -0.5f);
    if (course_kernels_only) EXPECT_EQ(dbeta[0], -0.5f);
  }
}

COURSE_INSTANTIATE_DEVICE_CASES(BatchNorm, ::testing::Values(MemoryFormat::kContiguous,
                                                             MemoryFormat::kChannelsLast));

}  // namespace
}  // namespace course
