// Batch norm, pooling, the fused optimizer and the multi-tensor sums of squares on every device
// (batch norm on a GPU through cuDNN's graph, counted).
// Batch norm against a double reference, in both layouts, and with its fused ReLU against batch
// norm then ReLU, with channels and planes of more than a
// warp's 32 lanes and not a multiple of it; pooling and the AdamW update on a GPU against the same
// call on the CPU (those cases skip without a GPU, with the reason); the GPU's packet kernels of
// channels-last max pooling against the CPU's per-pixel ones, run here on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

#include "common/kernels/batch_norm.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_plan.h"
#include "common/kernels/layout.h"
#include "common/kernels/optimizer_kernels.h"
#include "common/kernels/plan_cache.h"
#include "common/kernels/pooling.h"
#include "common/kernels/pooling_ops.h"
#include "common/kernels/pooling_packets_ops.h"
#include "common/kernels/quantize.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

using testing::random_tensor;
using testing::stored_bytes;
using testing::to_floats;

class NormPoolOptim : public testing::DeviceCaseTest<MemoryFormat> {
 protected:
  MemoryFormat format() const { return value<0>(); }
  // A random (N, C, H, W) tensor in this case's layout on this case's device, and its values in
  // NCHW order.
  std::pair<Tensor, std::vector<float>> activations(const Shape& shape, uint32_t seed) const {
    const testing::TestTensor t = random_tensor(shape, DType::kF32, Device::cpu(), seed, -3, 5);
    return {to_memory_format(t.tensor, format()).to(device()), t.values};
  }
  std::vector<float> nchw_values(const Tensor& t) const {
    return to_floats(to_memory_format(t.to(Device::cpu()), MemoryFormat::kContiguous));
  }
};

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

TEST_P(NormPoolOptim, BatchNormMatchesTheDoubleReference) {
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
    if (cudnn_graphs_compiled() && device().is_cuda()) {
      EXPECT_EQ(cudnn_graph_executions() - fused_before, 2) << "cuDNN's forward and backward";
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
TEST_P(NormPoolOptim, BatchNormWithItsFusedReluIsBatchNormThenRelu) {
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

TEST_P(NormPoolOptim, PoolingOnAGpuMatchesTheCpu) {
  if (device().is_cpu()) GTEST_SKIP() << "compares a GPU with the CPU";
  // 35 channels, and 64 in bf16 (channels-last runs by packets of 8 channels there).
  for (const auto& [channels, dtype] : {std::pair{35, DType::kF32}, {64, DType::kBF16}}) {
    const Tensor x = cast(activations({3, channels, 11, 9}, 5).first, dtype);
    const Tensor x_cpu = x.to(Device::cpu());
    // A padded 3x3 window, and the 2x2 one of stride 2 with its own loop (odd sides left over).
    for (const auto& [kernel, stride, padding, oh, ow] :
         {std::tuple{3, 2, 1, 6, 5}, std::tuple{2, 2, 0, 5, 4}}) {
      SCOPED_TRACE(::testing::Message()
                   << channels << " channels, " << kernel << "x" << kernel << " windows");
      const Tensor dy = cast(activations({3, channels, oh, ow}, 6).first, dtype);
      const Tensor dy_cpu = dy.to(Device::cpu());
      const MaxPoolResult gpu = max_pool_forward(x, kernel, stride, padding),
                          cpu = max_pool_forward(x_cpu, kernel, stride, padding);
      EXPECT_EQ(nchw_values(gpu.y), nchw_values(cpu.y));
      EXPECT_EQ(nchw_values(gpu.argmax.to(Device::cpu())), nchw_values(cpu.argmax));
      EXPECT_EQ(nchw_values(max_pool_backward(dy, gpu, x, kernel, stride, padding)),
                nchw_values(max_pool_backward(dy_cpu, cpu, x_cpu, kernel, stride, padding)));
    }
  }
  const Tensor x = activations({3, 35, 11, 9}, 5).first, x_cpu = x.to(Device::cpu());
  const Tensor pooled = global_avg_pool_forward(x);
  EXPECT_TRUE(testing::all_close(to_floats(pooled), to_floats(global_avg_pool_forward(x_cpu)),
                                 DType::kF32));
  EXPECT_EQ(nchw_values(global_avg_pool_backward(pooled, x)),
            nchw_values(global_avg_pool_backward(pooled.to(Device::cpu()), x_cpu)));
}

// An uninitialised tensor of t's shape, dtype and memory format on the CPU.
Tensor empty_as(const Tensor& t) {
  return Tensor::empty(t.shape(), t.dtype(), Device::cpu(), t.memory_format());
}

// Channels-last max pooling's packet kernels (a GPU's, by MaxPoolForwardPackets and
// MaxPoolBackwardPackets) run on the CPU's threads against the per-pixel kernels the CPU runs,
// byte for byte: outputs, positions and input gradients, for windows padded, overlapping and
// neither, on values with ties (halves in [-2, 2]), a NaN and both infinities.
template <class T>
void expect_packets_as_the_pixel_kernels(DType dtype) {
  SCOPED_TRACE(dtype_name(dtype));
  const int64_t c = 2 * ops::Packet<int8_t>::kSize;  // two packets of the narrowest type
  testing::TestTensor x_values = random_tensor({2, c, 9, 11}, DType::kF32, Device::cpu(), 8, -2, 2);
  std::vector<float>& v = x_values.values;
  for (float& e : v) e = std::round(2 * e) / 2;
  if (dtype != DType::kI8) {
    v[5] = std::numeric_limits<float>::quiet_NaN();
    v[200] = std::numeric_limits<float>::infinity();
    v[201] = -std::numeric_limits<float>::infinity();
  }
  const Tensor contiguous = Tensor::from_vector(v, {2, c, 9, 11});
  const Tensor x = to_memory_format(
      dtype == DType::kI8 ? quantize_symmetric(contiguous, 0.5f) : cast(contiguous, dtype),
      MemoryFormat::kChannelsLast);
  for (const auto& [kernel, stride, padding] :
       {std::tuple{3, 2, 1}, std::tuple{3, 1, 1}, std::tuple{2, 2, 0}}) {
    SCOPED_TRACE(::testing::Message() << kernel << "x" << kernel << " stride " << stride);
    const MaxPoolResult pixels = max_pool_forward(x, kernel, stride, padding);
    MaxPoolResult packets{empty_as(pixels.y), empty_as(pixels.argmax)};
    const Dims4 in = dims4(x, "test"), out = dims4(pixels.y, "test");
    const ops::PoolGeometry g{in.n,   in.c,   in.h,    in.w,       out.h,      out.w,
                              kernel, stride, padding, in.strides, out.strides};
    const ops::MaxPoolForwardPackets<T> forward{x.data_as<T>(), packets.y.data_as<T>(),
                                                packets.argmax.data_as<int32_t>(), g};
    for_each_host_index(forward.indices(), forward);
    EXPECT_EQ(stored_bytes(packets.y), stored_bytes(pixels.y));
    EXPECT_EQ(stored_bytes(packets.argmax), stored_bytes(pixels.argmax));
    if constexpr (!std::is_same_v<T, int8_t>) {
      const Tensor dy = to_memory_format(
          cast(random_tensor(pixels.y.shape(), DType::kF32, Device::cpu(), 9, -3, 3).tensor, dtype),
          MemoryFormat::kChannelsLast);
      const Tensor dx = max_pool_backward(dy, pixels, x, kernel, stride, padding);
      Tensor dx_packets = empty_as(dx);
      const ops::MaxPoolBackwardPackets<T> backward{
          dy.data_as<T>(), pixels.argmax.data_as<int32_t>(), dx_packets.data_as<T>(), g};
      for_each_host_index(backward.indices(), backward);
      EXPECT_EQ(stored_bytes(dx_packets), stored_bytes(dx));
    }
  }
}

TEST(MaxPoolPackets, MatchThePerPixelKernelsByteForByte) {
  expect_packets_as_the_pixel_kernels<float>(DType::kF32);
  expect_packets_as_the_pixel_kernels<BFloat16>(DType::kBF16);
  expect_packets_as_the_pixel_kernels<Half>(DType::kF16);
  expect_packets_as_the_pixel_kernels<int8_t>(DType::kI8);
}

// A GPU pools channels-last by packets where the channels fill whole packets, and pixel by
// pixel where they do not.
TEST(MaxPoolPackets, AGpuTakesThemForWholePacketsOfChannelsOnly) {
  for (const auto& [channels, name] : {std::pair{64, "Packets"}, {36, "ChannelsLast"}}) {
    const Tensor x = to_memory_format(Tensor::empty({2, channels, 8, 8}, DType::kBF16),
                                      MemoryFormat::kChannelsLast);
    LaunchLog log;
    const MaxPoolResult pooled = max_pool_forward(x, 3, 2, 1);
    max_pool_backward(pooled.y, pooled, x, 3, 2, 1);
    ASSERT_EQ(log.launches().size(), 2u);
    for (const RecordedLaunch& launch : log.launches()) {
      EXPECT_NE(launch.kernel.find(name), std::string::npos) << channels << ": " << launch.kernel;
    }
  }
}

TEST_P(NormPoolOptim, FusedAdamWOnAGpuMatchesTheCpu) {
  if (device().is_cpu()) GTEST_SKIP() << "compares a GPU with the CPU";
  if (format() != MemoryFormat::kContiguous) GTEST_SKIP() << "parameters have no layout";
  const AdamWHyper hyper{0.9f, 0.95f, 1e-8f, 0.1f};
  const auto run = [&](Device on) {
    std::vector<Tensor> tensors;
    for (int64_t size : {1, 33, 1000}) {
      for (uint32_t slot = 0; slot < 2; ++slot)
        tensors.push_back(random_tensor({size}, DType::kF32, on, 10 * size + slot).tensor);
      tensors.push_back(zeros({size}, DType::kF32, on));
      tensors.push_back(zeros({size}, DType::kF32, on));
    }
    std::vector<UpdateSlots> params;
    for (size_t p = 0; p < tensors.size(); p += 4)
      params.push_back({&tensors[p], &tensors[p + 1], &tensors[p + 2], &tensors[p + 3]});
    UpdateTable table;
    for (int64_t step = 1; step <= 3; ++step) {
      const std::vector<float> scalars = adamw_step_scalars(1e-2f, hyper, step);
      adamw_update_(table, params, hyper,
                    Tensor::from_vector(scalars, {static_cast<int64_t>(scalars.size())}, on));
    }
    std::vector<float> all;
    for (const Tensor& t : tensors) {
      const std::vector<float> v = to_floats(t);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  EXPECT_TRUE(testing::all_close(run(device()), run(Device::cpu()), {1e-6, 1e-5}));
}

class SumsOfSquares : public testing::DeviceTest {};

// The squares of tensors of 0, 1, one chunk less one, one chunk, one chunk and one, and several
// chunks of elements, written to targets out of order: each against a double reference, each
// equal bit for bit to its sum alone (a tensor's chunks start at its own start) and to the CPU's
// (the row lanes add in the same order on every device), and new values summed again through
// the kept table.
TEST_P(SumsOfSquares, EachTensorInChunksOfItsOwnBitForBit) {
  const std::vector<int64_t> sizes = {0, 1, 16383, 16384, 16385, 40001};
  const std::vector<int64_t> targets = {5, 0, 3, 1, 4, 2};
  const auto sums_of = [&](Device on, float scale, const std::vector<size_t>& which) {
    std::vector<Tensor> tensors;
    for (size_t i = 0; i < sizes.size(); ++i) {
      tensors.push_back(
          random_tensor({sizes[i]}, DType::kF32, on, 7 + i, -3.0f * scale, scale).tensor);
    }
    std::vector<const Tensor*> listed;
    std::vector<int64_t> listed_targets;
    for (size_t i : which) {
      listed.push_back(&tensors[i]);
      listed_targets.push_back(targets[i]);
    }
    Tensor sums = Tensor::from_vector(std::vector<float>(7, 7.0f), {7}, on);
    SquaresTable table;
    sums_of_squares_(table, listed, listed_targets, sums);
    return to_floats(sums);
  };
  const std::vector<size_t> all = {0, 1, 2, 3, 4, 5};
  const std::vector<float> sums = sums_of(device(), 1.0f, all);
  EXPECT_EQ(sums[6], 7.0f) << "a sum no tensor targets is left as it was";
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::vector<float> values =
        to_floats(random_tensor({sizes[i]}, DType::kF32, Device::cpu(), 7 + i, -3.0f, 1.0f).tensor);
    double reference = 0.0;
    for (float v : values) reference += double(v) * v;
    EXPECT_NEAR(sums[targets[i]], reference, 1e-5 * reference) << sizes[i] << " elements";
    EXPECT_EQ(sums_of(device(), 1.0f, {i})[targets[i]], sums[targets[i]]) << sizes[i] << " alone";
  }
  EXPECT_EQ(sums, sums_of(Device::cpu(), 1.0f, all)) << "the CPU's additions in the same order";
  // One table, new values at the same addresses: summed again, not remembered.
  std::vector<Tensor> tensors;
  std::vector<const Tensor*> listed;
  for (int64_t size : sizes) tensors.push_back(zeros({size}, DType::kF32, device()));
  for (const Tensor& t : tensors) listed.push_back(&t);
  SquaresTable table;
  Tensor out = zeros({7}, DType::kF32, device());
  sums_of_squares_(table, listed, targets, out);
  EXPECT_EQ(to_floats(out), std::vector<float>(7, 0.0f));
  for (Tensor& t : tensors) fill_(t, 2.0);
  sums_of_squares_(table, listed, targets, out);
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(to_floats(out)[targets[i]], 4.0f * static_cast<float>(sizes[i]));
  }
}

COURSE_INSTANTIATE_DEVICE_TESTS(SumsOfSquares);

COURSE_INSTANTIATE_DEVICE_CASES(NormPoolOptim, ::testing::Values(MemoryFormat::kContiguous,
                                                                 MemoryFormat::kChannelsLast));

}  // namespace
}  // namespace course
