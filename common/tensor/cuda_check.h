// Status checks for the CUDA libraries, in the project's one error family (common/core/error.h).
// Include only from code compiled with COURSE_WITH_CUDA.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include "common/core/error.h"

namespace course::detail {

// The fix for a binary without GPU code this GPU and driver can run (built for other
// architectures, or its PTX newer than the driver); nothing for any other status.
inline const char* cuda_status_advice(cudaError_t status) {
  const bool no_code =
      status == cudaErrorNoKernelImageForDevice || status == cudaErrorUnsupportedPtxVersion;
  return no_code ? "; build for this GPU's compute capability (nvidia-smi --query-gpu="
                   "compute_cap), e.g. bazel build --repo_env=COURSE_CUDA_ARCHS=90 ..."
                 : "";
}

}  // namespace course::detail

#define CUDA_CHECK(call)                                               \
  do {                                                                 \
    const cudaError_t course_status = (call);                          \
    COURSE_CHECK(course_status == cudaSuccess, #call,                  \
                 " failed: ", cudaGetErrorName(course_status), " (",   \
                 cudaGetErrorString(course_status), ")",               \
                 ::course::detail::cuda_status_advice(course_status)); \
  } while (0)

#define CUBLAS_CHECK(call)                                              \
  do {                                                                  \
    const cublasStatus_t course_status = (call);                        \
    COURSE_CHECK(course_status == CUBLAS_STATUS_SUCCESS, #call,         \
                 " failed: ", cublasGetStatusName(course_status), " (", \
                 cublasGetStatusString(course_status), ")");            \
  } while (0)

#define CUDNN_CHECK(call)                                          \
  do {                                                             \
    const cudnnStatus_t course_status = (call);                    \
    COURSE_CHECK(course_status == CUDNN_STATUS_SUCCESS, #call,     \
                 " failed: ", cudnnGetErrorString(course_status)); \
  } while (0)

#define NCCL_CHECK(call)                                          \
  do {                                                            \
    const ncclResult_t course_status = (call);                    \
    COURSE_CHECK(course_status == ncclSuccess, #call,             \
                 " failed: ", ncclGetErrorString(course_status)); \
  } while (0)
