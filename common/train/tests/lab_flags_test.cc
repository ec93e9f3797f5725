// --amp's type without --amp-dtype: the device's fastest (bf16 on the CPU and the simulated
// device, f16 before sm_80), a type named on the command line or by a DeepSpeed file kept, and
// each architecture's tensor-core types.
#include "common/train/lab_flags.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/train/deepspeed_config.h"

namespace course::train {
namespace {

// The run's flags after parsing `args` (a DeepSpeed file's --config among them).
RunFlags parsed_run_flags(std::vector<std::string> args) {
  CLI::App app;
  RunFlags run;
  add_run_flags(app, run, {"smallnet"});
  add_deepspeed_config_flag(app, std::make_shared<ResolvedConfig>());
  args.insert(args.begin(), "lab");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return run;
}

// --amp without --amp-dtype computes in the device's fastest 16-bit type: bf16 on the CPU and
// the simulated device (f16 only on a GPU before sm_80: a V100's tensor cores have f16 alone);
// a type the command line or a DeepSpeed file's fp16 section names is kept.
TEST(LabFlags, AmpTakesTheDevicesTypeUnlessOneIsNamed) {
  EXPECT_EQ(parsed_run_flags({"--amp", "--device", "cpu"}).amp_dtype, DType::kBF16);
  EXPECT_EQ(parsed_run_flags({"--amp", "--device", "sim"}).amp_dtype, DType::kBF16);
  EXPECT_EQ(parsed_run_flags({"--amp", "--amp-dtype", "f16", "--device", "sim"}).amp_dtype,
            DType::kF16);
  const std::string path = ::testing::TempDir() + "/ds_fp16.json";
  std::ofstream(path) << R"({"fp16": {"enabled": true}})";
  const RunFlags from_file = parsed_run_flags({"--config", path, "--device", "cpu"});
  EXPECT_TRUE(from_file.amp);
  EXPECT_EQ(from_file.amp_dtype, DType::kF16);
  std::remove(path.c_str());
  EXPECT_EQ(fastest_amp_dtype(Device::cpu()), DType::kBF16);
  EXPECT_EQ(tensor_core_types(70), "f16");
  EXPECT_EQ(tensor_core_types(75), "f16");
  EXPECT_EQ(tensor_core_types(80), "tf32, bf16, f16");
  EXPECT_EQ(tensor_core_types(90), "tf32, bf16, f16, fp8");
  EXPECT_EQ(tensor_core_types(60), "none");
}

}  // namespace
}  // namespace course::train
