// NCHW <-> NHWC conversion: element positions against the stride formula, and round trips; the
// relaid f32 accumulation against the logical sums.
#include "common/kernels/layout.h"

#include <gtest/gtest.h>

#include "common/kernels/elementwise.h"
#include "common/kernels/launch_plan.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

using LayoutTest = testing::DeviceTest;

TEST_P(LayoutTest, ChannelsLastPlacesEachElementAtItsStride) {
  for (const Shape& shape :
       {Shape{1, 1, 1, 1}, Shape{2, 3, 5, 7}, Shape{1, 1023, 1, 3}, Shape{3, 7, 1, 1}}) {
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kU8, DType::kI64}) {
      auto x = testing::random_tensor(shape, DType::kF32, device(), 31, 0.0f, 200.0f);
      Tensor typed = cast(x.tensor, dtype);
      const std::vector<float> logical = testing::to_floats(typed);
      Tensor nhwc = to_memory_format(typed, MemoryFormat::kChannelsLast);
      ASSERT_EQ(nhwc.memory_format(), MemoryFormat::kChannelsLast);
      // Read the raw storage: element (n, c, h, w) must sit at n*HWC + h*WC + w*C + c.
      Tensor raw = cast(nhwc, DType::kF32).to(Device::cpu());
      const float* stored = raw.data_as<float>();
      const int64_t C = shape[1], H = shape[2], W = shape[3];
      for (int64_t n = 0; n < shape[0]; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w)
              ASSERT_EQ(stored[((n * H + h) * W + w) * C + c],
                        logical[((n * C + c) * H + h) * W + w]);
      Tensor back = to_memory_format(nhwc, MemoryFormat::kContiguous);
      EXPECT_EQ(testing::to_floats(back), logical) << shape_str(shape) << dtype_name(dtype);
    }
  }
}

TEST_P(LayoutTest, ConvertingToTheSameFormatIsFreeAndOthersNeed4D) {
  Tensor x = zeros({2, 3, 4, 5}, DType::kF32, device());
  EXPECT_EQ(to_memory_format(x, MemoryFormat::kContiguous).data(), x.data());
  EXPECT_THROW(to_memory_format(zeros({2, 3}, DType::kF32, device()), MemoryFormat::kChannelsLast),
               Error);
}

// f32 += a 16-bit or f32 tensor in either format, element (n, c, h, w) onto element (n, c, h, w):
// against the sums of the logical values, exactly (each sum is one f32 addition).
TEST_P(LayoutTest, AccumulateF32AddsEachLogicalElement) {
  const Shape shape{3, 5, 2, 7};
  const auto prior = testing::random_tensor(shape, DType::kF32, device(), 40, -4.0f, 4.0f);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (MemoryFormat format : {MemoryFormat::kContiguous, MemoryFormat::kChannelsLast}) {
      const Tensor x = to_memory_format(
          cast(testing::random_tensor(shape, DType::kF32, device(), 41, -2.0f, 2.0f).tensor, dtype),
          format);
      const std::vector<float> addend =
          testing::to_floats(cast(to_memory_format(x, MemoryFormat::kContiguous), DType::kF32));
      Tensor out = prior.tensor.clone();
      accumulate_f32_(out, x);
      const std::vector<float> got = testing::to_floats(out);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i], prior.values[i] + addend[i])
            << dtype_name(dtype) << " " << memory_format_name(format) << " element " << i;
      }
    }
  }
  Tensor half_out = zeros(shape, DType::kBF16, device());
  EXPECT_THROW(accumulate_f32_(half_out, prior.tensor), Error) << "the sum is f32";
}

// A cast and a relayout in one pass: equal to the two passes apart (each element is one
// conversion either way), in one launch; no copy of what already is in both.
TEST_P(LayoutTest, CastAndRelayoutInOnePassEqualTheTwoApart) {
  const auto x = testing::random_tensor({6, 5, 3, 3}, DType::kF32, device(), 42, -3.0f, 3.0f);
  for (DType from : {DType::kF32, DType::kBF16}) {
    for (DType to : {DType::kBF16, DType::kF16, DType::kF32}) {
      for (MemoryFormat format : {MemoryFormat::kChannelsLast, MemoryFormat::kContiguous}) {
        const Tensor source = cast(x.tensor, from);
        const Tensor got = to_dtype_and_format(source, to, format);
        EXPECT_EQ(got.dtype(), to);
        EXPECT_EQ(got.memory_format(), format);
        const Tensor apart = to_memory_format(cast(source, to), format);
        // Raw storage, element for element: the layouts must agree, not only the values.
        const auto stored = [](const Tensor& t) {
          return testing::to_floats(
              cast(t, DType::kF32).view({t.numel()}, MemoryFormat::kContiguous));
        };
        EXPECT_EQ(stored(got), stored(apart))
            << dtype_name(from) << " -> " << dtype_name(to) << " " << memory_format_name(format);
        if (from == to && format == MemoryFormat::kContiguous) {
          EXPECT_EQ(got.data(), source.data());
        }
      }
    }
  }
  LaunchLog log;
  to_dtype_and_format(x.tensor, DType::kBF16, MemoryFormat::kChannelsLast);
  ASSERT_EQ(log.launches().size(), 1u);
  EXPECT_NE(log.launches()[0].kernel.find("Relayout"), std::string::npos);
}

COURSE_INSTANTIATE_DEVICE_TESTS(LayoutTest);

}  // namespace
}  // namespace course
