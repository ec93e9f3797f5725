// Pooling, the fused optimizer and the multi-tensor sums of squares on every device: pooling and
// the AdamW update on a GPU against the same call on the CPU (those cases skip without a GPU,
// with the reason); the GPU's packet kernels of channels-last max pooling against the CPU's
// per-pixel ones, run here on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

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
#include "common/kernels/tests/layout_cases.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

using testing::random_tensor;
using testing::stored_bytes;
using testing::to_floats;

class NormPoolOptim : public testing::LayoutCaseTest {};

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
