// Status checks for the CUDA libraries, in the project's one error family (common/core/error.h).
// Include only from code compiled with COURSE_WITH_CUDA.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include "common/core/error.h"

#define CUDA_CHECK(call)                                             \
  do {                                                               \
    const cudaError_t course_status = (call);                        \
    COURSE_CHECK(course_status == cudaSuccess, #call,                \
                 " failed: ", cudaGetErrorName(course_status), " (", \
                 cudaGetErrorString(course_status), ")");            \
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
