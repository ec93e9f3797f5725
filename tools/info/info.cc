// `bazel run //tools:info`: what this build and this machine have, the first command to run on
// a new cluster (or laptop) before any lab: each GPU's tensor-core types and the precision --amp
// takes on the default device among them.
//   info --gpus         the number of GPUs CUDA may use here (CUDA_VISIBLE_DEVICES and the job's
//                       cgroup honoured, unlike nvidia-smi -L), for scripts
//   info --check-gpu    whether this node can run this build's GPU code: a driver new enough for
//                       the CUDA it was built with, a cuDNN 9 and an NCCL 2 new enough for the
//                       calls it makes (older minors than the build's own are said, and pass);
//                       one line naming what is missing and exit 1 otherwise
#include <mpi.h>
#include <omp.h>

#include <cstdio>
#include <cstring>
#include <dnnl.hpp>
#include <opencv2/core/version.hpp>
#include <string>

#include "common/core/format.h"
#include "common/tensor/device.h"

#if COURSE_WITH_CUDA
#include "common/tensor/cuda_check.h"
#endif

namespace {

void print_row(const char* what, const std::string& value) {
  std::printf("  %-22s %s\n", what, value.c_str());
}

#if COURSE_WITH_CUDA
// A CUDA library's packed version number, e.g. 13000 with (1000, 10) -> "13.0.0".
std::string version_string(int version, int major_div, int minor_div) {
  return std::to_string(version / major_div) + "." +
         std::to_string(version % major_div / minor_div) + "." +
         std::to_string(version % minor_div);
}
#endif

void print_gpus() {
#if COURSE_WITH_CUDA
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  print_row("CUDA runtime", version_string(runtime, 1000, 10));
  print_row("cuDNN", version_string(static_cast<int>(cudnnGetVersion()), 10000, 100));
  int nccl = 0;
  ncclGetVersion(&nccl);
  print_row("NCCL", version_string(nccl, 10000, 100));
  for (int i = 0; i < course::cuda_device_count(); ++i) {
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
    const int capability = course::compute_capability(course::Device::cuda(i));
    print_row(("GPU " + std::to_string(i)).c_str(),
              std::string(prop.name) + ", sm_" + std::to_string(capability) + ", " +
                  course::format_bytes(prop.totalGlobalMem) +
                  ", tensor cores: " + course::tensor_core_types(capability));
  }
#endif
}

#if COURSE_WITH_CUDA
// The oldest cuDNN and NCCL whose calls the build makes: cuDNN 9's graph API (its engines are
// asked for at run time, cudnn_graph.cc), NCCL 2.14's non-blocking communicators
// (ncclCommInitRankConfig).
constexpr int kOldestCudnn = 90000;
constexpr int kOldestNccl = 21400;

// Why the loaded `name` (packed `loaded`) cannot serve a build compiled against `built`, which
// needs at least `oldest` of the same major version: "" when it can. A release older than the
// build's own is said on stderr.
std::string library_too_old(const char* name, int loaded, int major_div, int minor_div, int built,
                            int oldest) {
  const std::string have = version_string(loaded, major_div, minor_div);
  if (loaded / major_div != built / major_div || loaded < oldest) {
    return std::string(name) + " " + have + " is loaded, this build needs " +
           std::to_string(built / major_div) + ".x from " +
           version_string(oldest, major_div, minor_div) +
           " (module load, or LD_LIBRARY_PATH: tools/gpu_selftest/on_device.sh finds a Python's)";
  }
  if (loaded < built) {
    std::fprintf(stderr,
                 "note: %s %s is older than the %s this build compiled against: what it lacks "
                 "falls back, said where it does\n",
                 name, have.c_str(), version_string(built, major_div, minor_div).c_str());
  }
  return "";
}
#endif

// What this node lacks to run the build's GPU code ("" when nothing).
std::string missing_for_gpu() {
#if COURSE_WITH_CUDA
  // No driver, one too old for the build's CUDA, or no GPU visible (device.h says which).
  if (course::cuda_device_count() == 0) return course::cuda_status();
  // cuDNN and NCCL: any release of the build's major version from the oldest whose API the
  // build calls (an older minor than the build's own is said, its missing engines fall back).
  const std::string cudnn = library_too_old("cuDNN", static_cast<int>(cudnnGetVersion()), 10000,
                                            100, CUDNN_VERSION, kOldestCudnn);
  if (!cudnn.empty()) return cudnn;
  int nccl = 0;
  ncclGetVersion(&nccl);
  const std::string nccl_missing =
      library_too_old("NCCL", nccl, 10000, 100, NCCL_VERSION_CODE, kOldestNccl);
  if (!nccl_missing.empty()) return nccl_missing;
  return "";
#else
  return "this build has no CUDA";
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--gpus") == 0) {
    std::printf("%d\n", course::cuda_device_count());
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--check-gpu") == 0) {
    const std::string missing = missing_for_gpu();
    if (missing.empty()) {
      std::printf("ok: this node runs the build's GPU code (%d GPU(s))\n",
                  course::cuda_device_count());
      return 0;
    }
    std::fprintf(stderr, "error: %s\n", missing.c_str());
    return 1;
  }
  if (argc > 1) {
    std::fprintf(stderr, "usage: info [--gpus | --check-gpu]\n");
    return 2;
  }
  std::printf("Build and machine\n");
  print_row("CUDA", course::cuda_status());
  const course::Device device = course::default_device();
  print_row("default device", device.str());
  // The type --amp computes in without --amp-dtype (f16, loss-scaled, before sm_80).
  print_row("--amp computes in",
            std::string(course::dtype_name(course::fastest_amp_dtype(device))));
  print_gpus();
  const dnnl_version_t* dnnl = dnnl_version();
  print_row("oneDNN", std::to_string(dnnl->major) + "." + std::to_string(dnnl->minor) + "." +
                          std::to_string(dnnl->patch) +
                          (dnnl->cpu_runtime == DNNL_RUNTIME_OMP ? " (OpenMP)" : ""));
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(mpi, &length);
  std::string mpi_line(mpi, length);
  print_row("MPI", mpi_line.substr(0, mpi_line.find_first_of(",\n")));
  print_row("OpenCV", CV_VERSION);
  print_row("OpenMP threads", std::to_string(omp_get_max_threads()));
  return 0;
}
