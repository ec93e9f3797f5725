// Why no GPU is usable (gpu_absence.h), each cause with its conditions simulated: no driver,
// a driver too old for the build's CUDA (and a newer minor of an older major, which is too), a
// driver that sees no GPU (hidden by CUDA_VISIBLE_DEVICES, or none allocated), and any other
// failure in CUDA's own words; and this machine's own note, where it has no driver.
#include "common/tensor/gpu_absence.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "common/tensor/device.h"

namespace course {
namespace {

constexpr int kCuda13 = 13000;

GpuProbeFacts facts(int driver, bool no_device = false) {
  return {.driver_cuda_version = driver,
          .build_cuda_version = kCuda13,
          .no_device = no_device,
          .cuda_words = "CUDA driver version is insufficient for CUDA runtime version"};
}

TEST(GpuAbsence, NoDriverIsSaidAsNoDriverNotAsAnOldOne) {
  const std::string said = why_no_gpu(facts(0));
  EXPECT_EQ(said, "no NVIDIA driver on this machine (no GPU, or its driver is not installed)");
  EXPECT_EQ(said.find("insufficient"), std::string::npos);
}

TEST(GpuAbsence, ADriverTooOldNamesBothVersionsAndWhatToDo) {
  EXPECT_EQ(why_no_gpu(facts(12040)),
            "the NVIDIA driver runs CUDA up to 12.4, older than the CUDA 13.0 this build needs: "
            "update the driver, or build with CUDA 12.4's toolkit");
  EXPECT_NE(why_no_gpu(facts(12090)).find("CUDA up to 12.9, older than the CUDA 13.0"),
            std::string::npos);
  // A driver of the build's major version runs its every minor (minor version compatibility).
  EXPECT_EQ(why_no_gpu(facts(13000, true)).find("older"), std::string::npos);
}

TEST(GpuAbsence, ADriverThatSeesNoGpuSaysWhereTheyWent) {
  GpuProbeFacts none = facts(13020, true);
  EXPECT_EQ(why_no_gpu(none),
            "the NVIDIA driver (CUDA 13.2) sees no GPU: in a batch job, ask for one (Slurm: "
            "--gpus=1); on a desktop, see nvidia-smi");
  none.visible_devices = "";
  EXPECT_EQ(why_no_gpu(none),
            "the NVIDIA driver (CUDA 13.2) sees no GPU: CUDA_VISIBLE_DEVICES is set empty, which "
            "hides them all");
  none.visible_devices = "3";
  EXPECT_EQ(why_no_gpu(none),
            "the NVIDIA driver (CUDA 13.2) sees no GPU: CUDA_VISIBLE_DEVICES=3 names none that "
            "it has (nvidia-smi -L lists them)");
}

TEST(GpuAbsence, AnyOtherFailureIsCudasOwnWords) {
  GpuProbeFacts other = facts(13000);
  other.cuda_words = "all CUDA-capable devices are busy or unavailable";
  EXPECT_EQ(why_no_gpu(other), "CUDA: all CUDA-capable devices are busy or unavailable");
}

// This machine's own note, where the driver's library cannot be loaded (a machine without one).
TEST(GpuAbsence, ThisMachineWithoutADriverIsToldSo) {
  if (!cuda_compiled()) GTEST_SKIP() << "built without CUDA: " << cuda_status();
  if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(driver);
    GTEST_SKIP() << "this machine has an NVIDIA driver: " << cuda_status();
  }
  EXPECT_EQ(cuda_status(),
            "no GPU is usable: no NVIDIA driver on this machine (no GPU, or its driver is not "
            "installed)");
}

}  // namespace
}  // namespace course
