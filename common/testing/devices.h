// Tests parametrised over the devices of this build: the CPU and the simulated accelerator
// (device.h: the CPU's kernels on memory of its own, so a scratch buffer made on the wrong device
// fails there) always, the GPU when CUDA is compiled in. A GPU case where no GPU is visible is
// skipped with the reason, never passed.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "common/tensor/device.h"
#include "common/tensor/dtype.h"
#include "common/tensor/shape.h"

namespace course::testing {

// The CPU, for the cases that run only there.
inline const Device kCpu = Device::cpu();

std::vector<Device> test_devices();

// Base fixture: GetParam() is the device; SetUp skips GPU cases without a GPU.
class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override;
  Device device() const { return GetParam(); }
};

std::string device_test_name(const ::testing::TestParamInfo<Device>& info);

// Tests parametrised by (device, more...): the same skip, and case<I>() for the other values.
template <class... More>
class DeviceCaseTest : public ::testing::TestWithParam<std::tuple<Device, More...>> {
 protected:
  void SetUp() override {
    if (device().is_cuda() && cuda_device_count() == 0) {
      GTEST_SKIP() << "no GPU visible: " << cuda_status();
    }
  }
  Device device() const { return std::get<0>(this->GetParam()); }
  template <size_t I>
  const auto& value() const {
    return std::get<I + 1>(this->GetParam());
  }
};

// Readable case names: "cpu_f16_1023", "sim0_bf16_7".
std::string case_part(Device device);
std::string case_part(DType dtype);
std::string case_part(MemoryFormat format);  // "nchw", "nhwc"
std::string case_part(int64_t value);
std::string case_part(float value);  // 0.1 -> "0p1"

template <class... Values>
std::string case_name(const ::testing::TestParamInfo<std::tuple<Values...>>& info) {
  return std::apply(
      [](const auto& first, const auto&... rest) {
        return (case_part(first) + ... + ("_" + case_part(rest)));
      },
      info.param);
}

}  // namespace course::testing

// Runs every TEST_P of `Suite` (a DeviceCaseTest) once per device and combination of values.
#define COURSE_INSTANTIATE_DEVICE_CASES(Suite, ...)                                            \
  INSTANTIATE_TEST_SUITE_P(                                                                    \
      Cases, Suite,                                                                            \
      ::testing::Combine(::testing::ValuesIn(::course::testing::test_devices()), __VA_ARGS__), \
      [](const auto& info) { return ::course::testing::case_name(info); })

// Runs every TEST_P of `Suite` (a DeviceTest) once per device.
#define COURSE_INSTANTIATE_DEVICE_TESTS(Suite)                                                     \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite, ::testing::ValuesIn(::course::testing::test_devices()), \
                           ::course::testing::device_test_name)
