// The convolution's library choices: the math each data type runs with (f32 never in 16 bits;
// TF32 only when allowed), the choice of an algorithm (the fastest usable one whose workspace
// can be had, falling back instead of failing), and the convolution in both layouts and every
// float dtype on each device against the CPU's NCHW f32 result, with non-integer data and
// uneven sizes (on the GPU: cuDNN with NHWC filters for channels-last; skipped without a GPU).
#include <gtest/gtest.h>

#include "common/kernels/algorithm_choice.h"
#include "common/kernels/conv2d.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/kernels/math_mode.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

TEST(LibraryMath, F32NeverComputesInSixteenBits) {
  EXPECT_EQ(library_math(DType::kF32, false), LibraryMath::kStrictF32);
  EXPECT_EQ(library_math(DType::kF32, true), LibraryMath::kTf32);
  for (DType d : {DType::kF16, DType::kBF16}) {
    EXPECT_EQ(library_math(d, false), LibraryMath::kTensorOp16) << dtype_name(d);
    EXPECT_EQ(library_math(d, true), LibraryMath::kTensorOp16) << dtype_name(d);
  }
  EXPECT_THROW(library_math(DType::kI32, true), Error);
}

TEST(LibraryMath, SwitchesDefaultAsPyTorchs) {
  const Tf32Switches defaults;
  EXPECT_TRUE(defaults.conv);
  EXPECT_FALSE(defaults.matmul);
  {
    const ScopedTf32Switches changed({.conv = false, .matmul = true});
    EXPECT_FALSE(tf32_switches().conv);
    EXPECT_TRUE(tf32_switches().matmul);
  }
  EXPECT_TRUE(tf32_switches().conv) << "restored at the scope's end";
  EXPECT_FALSE(tf32_switches().matmul);
}

TEST(AlgorithmChoice, TakesTheFastestUsableOneWhoseWorkspaceFits) {
  const std::vector<AlgorithmCandidate> ranked = {
      {.algorithm = 6, .usable = false, .workspace_bytes = 0},    // not supported for the shape
      {.algorithm = 1, .usable = true, .workspace_bytes = 4096},  // too large for the memory left
      {.algorithm = 0, .usable = true, .workspace_bytes = 1024},
      {.algorithm = 2, .usable = true, .workspace_bytes = 0}};
  std::vector<size_t> asked;
  const auto fits_2k = [&](size_t bytes) {
    asked.push_back(bytes);
    return bytes <= 2048;
  };
  EXPECT_EQ(choose_algorithm(ranked, fits_2k), std::optional<size_t>(2));
  EXPECT_EQ(asked, (std::vector<size_t>{4096, 1024}));  // never the unusable one's
  EXPECT_EQ(choose_algorithm(ranked, [](size_t) { return true; }), std::optional<size_t>(1));
  EXPECT_EQ(choose_algorithm(ranked, [](size_t) { return false; }), std::nullopt);
  EXPECT_EQ(choose_algorithm({}, [](size_t) { return true; }), std::nullopt);
}

using ConvCase = testing::DeviceCaseTest<DType, MemoryFormat>;

testing::Tolerance conv_tolerance(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return {.atol = 1e-2, .rtol = 4e-3};
    case DType::kBF16:
      return {.atol = 8e-2, .rtol = 2e-2};
    default:
      return {.atol = 1e-4, .rtol = 1e-4};  // another summation order than oneDNN's
  }
}

// Forward, backward-data and backward-weights (accumulating onto a non-zero gradient, of the
// operands' dtype or, for 16-bit operands, f32) of a 3x3 convolution, stride 2, padding 1, on
// 5 x 7 x 9 x 11 inputs.
TEST_P(ConvCase, PassesMatchTheCpuNchwReferenceInF32) {
  const DType dtype = value<0>();
  const MemoryFormat format = value<1>();
  const ScopedTf32Switches strict({.conv = false, .matmul = false});  // f32 on the GPU in f32
  const Conv2dShape conv{.stride = 2, .padding = 1};
  const auto x = testing::random_tensor({5, 7, 9, 11}, DType::kF32, Device::cpu(), 1);
  const auto w = testing::random_tensor({6, 7, 3, 3}, DType::kF32, Device::cpu(), 2);
  const auto prior = testing::random_tensor({6, 7, 3, 3}, DType::kF32, Device::cpu(), 3);
  const auto dy = testing::random_tensor(
      conv2d_output_shape(x.tensor.shape(), w.tensor.shape(), conv), DType::kF32, Device::cpu(), 4);

  // The reference: the CPU's NCHW f32 passes on the operands rounded to `dtype`, so only the
  // arithmetic differs.
  const auto on_device = [&](const Tensor& t) {
    return to_memory_format(cast(t, dtype).to(device()), format);
  };
  const auto back = [](const Tensor& t) {
    return testing::to_floats(
        cast(to_memory_format(t, MemoryFormat::kContiguous), DType::kF32).to(Device::cpu()));
  };
  const auto rounded = [&](const Tensor& t) { return cast(cast(t, dtype), DType::kF32); };
  const Tensor xr = rounded(x.tensor), wr = rounded(w.tensor), dyr = rounded(dy.tensor);
  const Tensor y_want = conv2d_forward(xr, wr, conv);
  const Tensor dx_want = conv2d_backward_data(dyr, wr, xr, conv);
  Tensor dw_want = rounded(prior.tensor);
  conv2d_backward_weights_add(dyr, xr, dw_want, conv);

  const Tensor xd = on_device(x.tensor), dyd = on_device(dy.tensor);
  const Tensor wd = cast(w.tensor, dtype).to(device());
  Tensor dwd = cast(prior.tensor, dtype).to(device());
  const Tensor y = conv2d_forward(xd, wd, conv);
  EXPECT_EQ(y.memory_format(), format);
  const Tensor dx = conv2d_backward_data(dyd, wd, xd, conv);
  conv2d_backward_weights_add(dyd, xd, dwd, conv);
  const testing::Tolerance tol = conv_tolerance(dtype);
  EXPECT_TRUE(testing::all_close(back(y), testing::to_floats(y_want), tol)) << "forward";
  EXPECT_TRUE(testing::all_close(back(dx), testing::to_floats(dx_want), tol)) << "backward data";
  EXPECT_TRUE(testing::all_close(back(dwd), testing::to_floats(dw_want), tol))
      << "backward weights";
  // Mixed precision: 16-bit operands, the gradient added to the f32 master gradient.
  if (dtype != DType::kF32) {
    Tensor gradient = zeros(w.tensor.shape());
    conv2d_backward_weights_add(dyr, xr, gradient, conv);
    Tensor master_want = prior.tensor.clone();
    axpy_(1.0f, gradient, master_want);
    Tensor master = prior.tensor.to(device());
    conv2d_backward_weights_add(dyd, xd, master, conv);
    EXPECT_EQ(master.dtype(), DType::kF32);
    EXPECT_TRUE(testing::all_close(back(master), testing::to_floats(master_want), tol))
        << "backward weights into an f32 gradient";
  }
}

// Weights passed in the activations' memory format (as the layers pass them on an accelerator:
// conv2d_weight_format) give what contiguous ones give, grouped too (oneDNN's ohwi/gohwi,
// cuDNN's KRSC filters without a copy of their own).
TEST_P(ConvCase, WeightsInTheActivationsFormatGiveWhatContiguousOnesGive) {
  const DType dtype = value<0>();
  const MemoryFormat format = value<1>();
  const ScopedTf32Switches strict({.conv = false, .matmul = false});
  for (int64_t groups : {1, 2, 6}) {
    const Conv2dShape conv{.stride = 1, .padding = 1, .groups = groups};
    const auto x = testing::random_tensor({3, 6, 5, 7}, DType::kF32, Device::cpu(), 5);
    const auto w = testing::random_tensor({12, 6 / groups, 3, 3}, DType::kF32, Device::cpu(), 6);
    const Shape y_shape = conv2d_output_shape(x.tensor.shape(), w.tensor.shape(), conv);
    const auto dy = testing::random_tensor(y_shape, DType::kF32, Device::cpu(), 7);
    const auto on_device = [&](const Tensor& t) {
      return to_memory_format(cast(t, dtype).to(device()), format);
    };
    const auto back = [](const Tensor& t) {
      return testing::to_floats(
          cast(to_memory_format(t, MemoryFormat::kContiguous), DType::kF32).to(Device::cpu()));
    };
    const Tensor xd = on_device(x.tensor), dyd = on_device(dy.tensor);
    const Tensor plain = cast(w.tensor, dtype).to(device());
    const Tensor relaid = to_memory_format(plain, format);
    const testing::Tolerance tol = conv_tolerance(dtype);
    EXPECT_TRUE(testing::all_close(back(conv2d_forward(xd, relaid, conv)),
                                   back(conv2d_forward(xd, plain, conv)), tol))
        << "forward, groups " << groups;
    EXPECT_TRUE(testing::all_close(back(conv2d_backward_data(dyd, relaid, xd, conv)),
                                   back(conv2d_backward_data(dyd, plain, xd, conv)), tol))
        << "backward data, groups " << groups;
  }
  // Weights in the other channels-last/contiguous pairing than the activations are refused.
  if (format == MemoryFormat::kContiguous) {
    const Tensor x = zeros({1, 2, 4, 4}, dtype, device());
    const Tensor w =
        to_memory_format(zeros({2, 2, 3, 3}, dtype, device()), MemoryFormat::kChannelsLast);
    EXPECT_THROW(conv2d_forward(x, w, {}), Error);
  }
  EXPECT_EQ(conv2d_weight_format(to_memory_format(zeros({1, 1, 1, 1}, dtype, device()), format)),
            device().is_accelerator() ? format : MemoryFormat::kContiguous);
}

COURSE_INSTANTIATE_DEVICE_CASES(ConvCase, ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                                ::testing::Values(MemoryFormat::kContiguous,
                                                  MemoryFormat::kChannelsLast));

}  // namespace
}  // namespace course
