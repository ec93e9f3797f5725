// Tensors: shapes, strides and memory formats, views, copies, devices, and bad input.
#include "common/tensor/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/testing/devices.h"

namespace course {
namespace {

using ::testing::HasSubstr;

TEST(Tensor, DenseStridesPerMemoryFormat) {
  Tensor t = Tensor::empty({2, 3, 4, 5});
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{60, 20, 5, 1}));
  Tensor nhwc =
      Tensor::empty({2, 3, 4, 5}, DType::kF16, Device::cpu(), MemoryFormat::kChannelsLast);
  EXPECT_EQ(nhwc.strides(), (std::vector<int64_t>{60, 1, 15, 3}));
  EXPECT_EQ(nhwc.nbytes(), 120u * 2);
  EXPECT_EQ(nhwc.size(-1), 5);
  EXPECT_EQ(nhwc.str(), "Tensor(f16, (2, 3, 4, 5), cpu, channels-last)");
}

TEST(Tensor, FromVectorViewSliceAndCopyShareOrOwnStorage) {
  Tensor t = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, {3, 2});
  Tensor v = t.view({2, 3});
  EXPECT_EQ(v.data(), t.data());
  Tensor rows = t.slice(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 2}));
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
  // Three pixels of 2 channels read as channels-last (N, C, H, W) = (1, 2, 1, 3): channel c of
  // pixel w is element 2 w + c.
  Tensor pixels = t.view({1, 2, 1, 3}, MemoryFormat::kChannelsLast);
  EXPECT_EQ(pixels.data(), t.data());
  EXPECT_EQ(pixels.strides(), (std::vector<int64_t>{6, 1, 6, 2}));
  EXPECT_THROW(t.view({3, 2}, MemoryFormat::kChannelsLast), Error);
  // The second of two such images: its 6 values follow the first's, its layout the same.
  const Tensor two = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {12})
                         .view({2, 2, 1, 3}, MemoryFormat::kChannelsLast);
  const Tensor second = two.slice(1, 2);
  EXPECT_EQ(second.shape(), (Shape{1, 2, 1, 3}));
  EXPECT_EQ(second.memory_format(), MemoryFormat::kChannelsLast);
  EXPECT_EQ(second.strides(), (std::vector<int64_t>{6, 1, 6, 2}));
  EXPECT_EQ(static_cast<const float*>(second.data()), static_cast<const float*>(two.data()) + 6);
  Tensor copy = t.clone();
  EXPECT_NE(copy.data(), t.data());
  EXPECT_EQ(copy.to_vector<float>(), t.to_vector<float>());
}

TEST(Tensor, BadInputIsAClearError) {
  EXPECT_THROW(Tensor::empty({2, -1}), Error);
  EXPECT_THROW(Tensor::empty({2, 3}, DType::kF32, Device::cpu(), MemoryFormat::kChannelsLast),
               Error);
  Tensor t = Tensor::empty({2, 3});
  try {
    t.view({4, 2});
    FAIL() << "view to a different element count was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot view shape (2, 3) as (4, 2)"));
  }
  EXPECT_THROW(t.slice(1, 4), Error);
  EXPECT_THROW(t.data_as<Half>(), Error);
  EXPECT_THROW(Tensor::from_vector<float>({1, 2, 3}, {2, 2}), Error);
  EXPECT_THROW(Tensor().data(), Error);
  // Shapes whose element count overflows, and sizes no machine has, are refused up front.
  EXPECT_THROW(Tensor::empty({int64_t{1} << 40, int64_t{1} << 40}), Error);
  EXPECT_THROW(Tensor::empty({int64_t{1} << 61}), Error);
}

TEST(DType, NamesRoundTripAndUnknownNamesAreErrors) {
  for (DType d :
       {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kU8, DType::kI8}) {
    EXPECT_EQ(parse_dtype(dtype_name(d)), d);
  }
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
  EXPECT_THAT([] { parse_dtype("fp16"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("unknown dtype 'fp16'")));
}

TEST(Device, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu());
  EXPECT_EQ(parse_device("cuda"), Device::cuda(0));
  EXPECT_EQ(parse_device("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::cuda(2).str(), "cuda:2");
  for (const char* bad : {"gpu0", "cuda:", "cuda:-1", "cuda:1x", "tpu"}) {
    EXPECT_THROW(parse_device(bad), Error) << bad;
  }
}

// A --device request: none, one device by name, or a kind alone (each rank its own).
TEST(Device, RequestsSayWhetherEachRankTakesItsOwn) {
  EXPECT_FALSE(parse_device_request("").named.has_value());
  EXPECT_EQ(named_or_default_device(parse_device_request("cpu")), Device::cpu());
  for (const char* kind : {"cuda", "gpu", "sim"}) {
    EXPECT_TRUE(parse_device_request(kind).per_rank) << kind;
  }
  for (const char* one : {"cpu", "cuda:0", "cuda:3", "sim:2"}) {
    const DeviceRequest request = parse_device_request(one);
    EXPECT_FALSE(request.per_rank) << one;
    EXPECT_EQ(request.named, parse_device(one)) << one;
  }
  EXPECT_EQ(parse_device_request("sim").named, Device::sim(0));
  EXPECT_THROW(parse_device_request("tpu"), Error);
}

TEST(Device, AGpuThatIsNotVisibleIsAClearError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is visible here";
  try {
    Tensor::empty({4}, DType::kF32, Device::cuda(0));
    FAIL() << "a GPU tensor was created without a GPU";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("device cuda:0 requested"));
  }
  EXPECT_EQ(default_device(), Device::cpu());
}

using TensorDeviceTest = testing::DeviceTest;

TEST_P(TensorDeviceTest, CopiesToAndFromTheDevice) {
  Tensor host = Tensor::from_vector<int32_t>({1, -2, 3, -4, 5}, {5});
  Tensor there = host.to(device());
  EXPECT_EQ(there.device(), device());
  EXPECT_EQ(there.to(Device::cpu()).to_vector<int32_t>(), host.to_vector<int32_t>());
  EXPECT_EQ(there.to_vector<int32_t>(), host.to_vector<int32_t>());
}

COURSE_INSTANTIATE_DEVICE_TESTS(TensorDeviceTest);

}  // namespace
}  // namespace course
