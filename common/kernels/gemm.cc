// GEMM dispatch: OpenBLAS sgemm on the CPU, cublasGemmEx on the GPU (TF32 as math_mode.h says).
#include "common/kernels/gemm.h"

#include <cblas.h>

#include "common/kernels/elementwise.h"
#include "common/kernels/library_handle.h"
#include "common/kernels/math_mode.h"
#include "common/tensor/capture.h"

#if COURSE_WITH_CUDA
#include "common/tensor/cuda_check.h"
#endif

namespace course {

namespace {

struct GemmShape {
  int64_t m, n, k;
};

GemmShape check_gemm(const Tensor& a, bool ta, const Tensor& b, bool tb, const Tensor& c) {
  COURSE_CHECK(a.dim() == 2 && b.dim() == 2 && c.dim() == 2, "gemm needs 2-D tensors, got ",
               a.str(), ", ", b.str(), ", ", c.str());
  COURSE_CHECK(is_floating(a.dtype()), "gemm needs floating-point tensors, got ",
               dtype_name(a.dtype()));
  COURSE_CHECK(a.dtype() == b.dtype() && a.dtype() == c.dtype(),
               "gemm dtypes differ: ", dtype_name(a.dtype()), ", ", dtype_name(b.dtype()), ", ",
               dtype_name(c.dtype()));
  COURSE_CHECK(a.device() == b.device() && a.device() == c.device(), "gemm devices differ");
  const GemmShape s{ta ? a.size(1) : a.size(0), tb ? b.size(0) : b.size(1),
                    ta ? a.size(0) : a.size(1)};
  const int64_t kb = tb ? b.size(1) : b.size(0);
  COURSE_CHECK(s.k == kb && c.size(0) == s.m && c.size(1) == s.n,
               "gemm shapes do not match: op(a) ", s.m, "x", s.k, ", op(b) ", kb, "x", s.n, ", c ",
               shape_str(c.shape()));
  return s;
}

void cpu_sgemm(const Tensor& a, bool ta, const Tensor& b, bool tb, Tensor& c, GemmShape s,
               float alpha, float beta) {
  run_host_work([=, pa = a.data_as<float>(), lda = a.size(1), pb = b.data_as<float>(),
                 ldb = b.size(1), pc = c.data_as<float>(), ldc = c.size(1)] {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, s.m,
                s.n, s.k, alpha, pa, lda, pb, ldb, beta, pc, ldc);
  });
}

#if COURSE_WITH_CUDA
// This thread's handle, issuing its work on the thread's current stream.
cublasHandle_t cublas_handle(Device device) {
  cublasHandle_t handle = thread_handle<cublasHandle_t>(
      device, [](cublasHandle_t* h) { CUBLAS_CHECK(cublasCreate(h)); });
  CUBLAS_CHECK(cublasSetStream(handle, static_cast<cudaStream_t>(current_cuda_stream())));
  return handle;
}

cudaDataType cuda_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return CUDA_R_32F;
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    default:
      COURSE_FAIL("no cuBLAS type for ", dtype_name(dtype));
  }
}

// f32 GEMMs use TF32 tensor cores only when --tf32-matmul allows it (PyTorch's default: not).
cublasComputeType_t cublas_compute(DType dtype) {
  return library_math(dtype, tf32_switches().matmul) == LibraryMath::kTf32
             ? CUBLAS_COMPUTE_32F_FAST_TF32
             : CUBLAS_COMPUTE_32F;
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
void gpu_gemm(const Tensor& a, bool ta, const Tensor& b, bool tb, Tensor& c, GemmShape s,
              float alpha, float beta) {
  check_capture_device(a.device());
  set_current_device(a.device());
  const cudaDataType type = cuda_type(a.dtype());
  CUBLAS_CHECK(cublasGemmEx(cublas_handle(a.device()), tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                            ta ? CUBLAS_OP_T : CUBLAS_OP_N, s.n, s.m, s.k, &alpha, b.data(), type,
                            b.size(1), a.data(), type, a.size(1), &beta, c.data(), type, c.size(1),
                            cublas_compute(a.dtype()), CUBLAS_GEMM_DEFAULT));
}
#endif

}  // namespace

void gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& c,
          float alpha, float beta) {
  const GemmShape s = check_gemm(a, transpose_a, b, transpose_b, c);
  if (s.m == 0 || s.n == 0) return;
  if (a.device().is_cuda()) {
#if COURSE_WITH_CUDA
    gpu_gemm(a, transpose_a, b, transpose_b, c, s, alpha, beta);
    return;
#else
    COURSE_FAIL("gemm on ", a.device().str(), " in a build without CUDA");
#endif
  }
  if (a.dtype() == DType::kF32) {
    cpu_sgemm(a, transpose_a, b, transpose_b, c, s, alpha, beta);
    return;
  }
  Tensor c32 = cast(c, DType::kF32);
  cpu_sgemm(cast(a, DType::kF32), transpose_a, cast(b, DType::kF32), transpose_b, c32, s, alpha,
            beta);
  copy_(c, cast(c32, c.dtype()));
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  COURSE_CHECK(a.dim() == 2 && b.dim() == 2, "matmul needs 2-D tensors, got ", a.str(), ", ",
               b.str());
  Tensor c =
      Tensor::empty({transpose_a ? a.size(1) : a.size(0), transpose_b ? b.size(0) : b.size(1)},
                    a.dtype(), a.device());
  gemm(a, transpose_a, b, transpose_b, c);
  return c;
}

}  // namespace course
