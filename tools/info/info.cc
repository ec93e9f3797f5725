// `bazel run //tools:info`: what this build and this machine have, the first command to run on
// a new cluster (or laptop) before any lab.
#include <mpi.h>
#include <omp.h>

#include <cstdio>
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
    print_row(("GPU " + std::to_string(i)).c_str(),
              std::string(prop.name) + ", sm_" + std::to_string(prop.major) +
                  std::to_string(prop.minor) + ", " + course::format_bytes(prop.totalGlobalMem));
  }
#endif
}

}  // namespace

int main() {
  std::printf("Build and machine\n");
  print_row("CUDA", course::cuda_status());
  print_row("default device", course::default_device().str());
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
