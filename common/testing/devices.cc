// Device parametrisation of tests.
#include "common/testing/devices.h"

namespace course::testing {

std::vector<Device> test_devices() {
  std::vector<Device> devices{Device::cpu(), Device::sim(0)};
  if (cuda_compiled()) devices.push_back(Device::cuda(0));
  return devices;
}

void DeviceTest::SetUp() {
  if (device().is_cuda() && cuda_device_count() == 0) {
    GTEST_SKIP() << "no GPU visible: " << cuda_status();
  }
}

std::string case_part(Device device) {
  if (device.is_cpu()) return "cpu";
  return (device.is_sim() ? "sim" : "cuda") + std::to_string(device.index);
}

std::string case_part(DType dtype) { return std::string(dtype_name(dtype)); }

std::string case_part(MemoryFormat format) {
  return format == MemoryFormat::kChannelsLast ? "nhwc" : "nchw";
}

std::string case_part(int64_t value) { return std::to_string(value); }

std::string case_part(float value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  for (char& c : text) c = c == '.' ? 'p' : c;
  return text;
}

std::string device_test_name(const ::testing::TestParamInfo<Device>& info) {
  return case_part(info.param);
}

}  // namespace course::testing
