// Device parametrisation of tests.
#include "common/testing/devices.h"

namespace course::testing {

std::vector<Device> test_devices() {
  std::vector<Device> devices{Device::cpu()};
  if (cuda_compiled()) devices.push_back(Device::cuda(0));
  return devices;
}

void DeviceTest::SetUp() {
  if (device().is_cuda() && cuda_device_count() == 0) {
    GTEST_SKIP() << "no GPU visible: " << cuda_status();
  }
}

std::string device_test_name(const ::testing::TestParamInfo<Device>& info) {
  return info.param.is_cpu() ? "cpu" : "cuda" + std::to_string(info.param.index);
}

}  // namespace course::testing
