// The energy meter on a copy of RAPL's sysfs folder: each package's joules since the start
// (its zones not counted twice), a counter that wrapped around its range between reads, a
// folder without packages named once as unmeasured; core-hours from the wall clock and the
// cores; the summary line.
#include "common/train/energy_meter.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "common/testing/errors_and_files.h"

namespace course::train {
namespace {

namespace fs = std::filesystem;

void write_counter(const fs::path& folder, double energy_uj, double range_uj) {
  fs::create_directories(folder);
  std::ofstream(folder / "energy_uj") << static_cast<int64_t>(energy_uj) << "\n";
  std::ofstream(folder / "max_energy_range_uj") << static_cast<int64_t>(range_uj) << "\n";
}

TEST(EnergyMeter, SumsThePackagesSinceTheStartAcrossAWrap) {
  const fs::path root = course::testing::temp_path("powercap");
  const double range = 262143328850;  // a real package's range, in microjoules
  write_counter(root / "intel-rapl:0", 1e9, range);
  write_counter(root / "intel-rapl:1", range - 2e6, range);  // 2 J before its wrap
  write_counter(root / "intel-rapl:0:0", 5e8, range);        // a zone of package 0: not counted
  EnergyMeter meter({.powercap = root.string(), .cores = 4});
  EXPECT_TRUE(meter.unmeasured().empty());
  EXPECT_DOUBLE_EQ(*meter.read().cpu_joules, 0.0);
  write_counter(root / "intel-rapl:0", 1e9 + 30e6, range);  // 30 J
  write_counter(root / "intel-rapl:1", 5e6, range);         // 2 J, then 5 J past the wrap
  write_counter(root / "intel-rapl:0:0", 9e9, range);
  EXPECT_NEAR(*meter.read().cpu_joules, 37.0, 1e-6);
  write_counter(root / "intel-rapl:1", 6e6, range);  // 1 J more
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const EnergyReading r = meter.read();
  EXPECT_NEAR(*r.cpu_joules, 38.0, 1e-6);
  EXPECT_FALSE(r.gpu_joules);
  EXPECT_GT(r.core_hours, 4 * 0.02 / 3600);
  EXPECT_LT(r.core_hours, 4 * 60.0 / 3600);
  EXPECT_EQ(r.gpu_hours, 0);
}

TEST(EnergyMeter, ASourceThatCannotBeReadIsNamedOnceNotAnError) {
  EnergyMeter meter({.powercap = course::testing::temp_path("no-powercap"), .cores = 2});
  ASSERT_EQ(meter.unmeasured().size(), 1u);
  EXPECT_NE(meter.unmeasured()[0].find("has no readable RAPL package"), std::string::npos);
  const EnergyReading r = meter.read();
  EXPECT_FALSE(r.cpu_joules);
  EXPECT_GE(r.core_hours, 0);
  EXPECT_EQ(describe_energy({.cpu_joules = 1234.4, .core_hours = 0.5, .gpu_hours = 0}),
            "energy: CPU packages 1234 J, GPU not measured; 0.5 core-hours, 0 GPU-hours");
}

// CUDA's device N is the N-th of CUDA_VISIBLE_DEVICES in NVML's numbering (Slurm's GPUs 3 and 5
// are CUDA's 0 and 1), or its UUID.
TEST(EnergyMeter, FindsTheCudaDeviceInNvmlsNumbering) {
  const auto device = [](int index, const char* visible) { return nvml_device_of(index, visible); };
  EXPECT_EQ(device(1, nullptr)->id, "1");
  EXPECT_EQ(device(1, "")->id, "1");
  EXPECT_EQ(device(1, "3,5")->id, "5");
  EXPECT_FALSE(device(1, "3,5")->by_uuid);
  EXPECT_EQ(device(0, "GPU-8f2a,GPU-77c1")->id, "GPU-8f2a");
  EXPECT_TRUE(device(0, "GPU-8f2a,GPU-77c1")->by_uuid);
  EXPECT_FALSE(device(2, "3,5"));
}

}  // namespace
}  // namespace course::train
