// Tests parametrised over the devices of this build: the CPU always, the GPU when CUDA is
// compiled in. A GPU case where no GPU is visible is skipped with the reason, never passed.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/tensor/device.h"

namespace course::testing {

std::vector<Device> test_devices();

// Base fixture: GetParam() is the device; SetUp skips GPU cases without a GPU.
class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override;
  Device device() const { return GetParam(); }
};

std::string device_test_name(const ::testing::TestParamInfo<Device>& info);

}  // namespace course::testing

// Runs every TEST_P of `Suite` (a DeviceTest) once per device.
#define COURSE_INSTANTIATE_DEVICE_TESTS(Suite)                                                     \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite, ::testing::ValuesIn(::course::testing::test_devices()), \
                           ::course::testing::device_test_name)
