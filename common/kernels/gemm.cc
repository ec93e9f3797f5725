// GEMM dispatch: oneDNN's sgemm on the CPU, cuBLAS on the GPU (TF32 as math_mode.h says); the
// fully connected layer's products with their epilogues through cuBLASLt are cublaslt_linear.cc.
//
// oneDNN picks its CPU kernels from the instruction sets the CPU reports (AVX2, AVX-512, ...).
// OpenBLAS 0.3.21 (Debian 12) picks them from the CPU's model number, and on a model it does not
// know (Emerald Rapids, say) falls back to its SSE3 kernels: a fifth of the speed.
#include "common/kernels/gemm.h"

#include <dnnl.h>
#include <dnnl_debug.h>
#include <omp.h>

#include <algorithm>

#include "common/kernels/elementwise.h"
#include "common/kernels/launch_plan.h"
#include "common/kernels/math_mode.h"
#include "common/kernels/multiply_adds.h"
#include "common/tensor/capture.h"

#if COURSE_WITH_CUDA
#include "common/kernels/cublaslt_matmul.h"
#include "common/tensor/cuda_check.h"
#endif

namespace course {

#if COURSE_WITH_CUDA
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
#endif

namespace {

struct GemmShape {
  int64_t batch, m, n, k;
};

int64_t matrix_rows(const Tensor& t) { return t.size(t.dim() - 2); }
int64_t matrix_cols(const Tensor& t) { return t.size(t.dim() - 1); }
int64_t matrix_size(const Tensor& t) { return matrix_rows(t) * matrix_cols(t); }

// The shapes of c = op(a) op(b) over `dims`-D tensors: 2-D matrices, or 3-D batches of them.
GemmShape check_gemm(const Tensor& a, bool ta, const Tensor& b, bool tb, const Tensor& c,
                     int dims) {
  const char* what = dims == 2 ? "gemm" : "batched gemm";
  COURSE_CHECK(a.dim() == dims && b.dim() == dims && c.dim() == dims, what, " needs ", dims,
               "-D tensors, got ", a.str(), ", ", b.str(), ", ", c.str());
  COURSE_CHECK(is_floating(a.dtype()), what, " needs floating-point tensors, got ",
               dtype_name(a.dtype()));
  // 16-bit operands may accumulate into an f32 output (a weight gradient into its f32 master).
  COURSE_CHECK(a.dtype() == b.dtype() && (a.dtype() == c.dtype() || c.dtype() == DType::kF32), what,
               " dtypes differ: ", dtype_name(a.dtype()), ", ", dtype_name(b.dtype()), ", ",
               dtype_name(c.dtype()));
  COURSE_CHECK(a.device() == b.device() && a.device() == c.device(), what, " devices differ");
  const int64_t batch = dims == 3 ? a.size(0) : 1;
  COURSE_CHECK(dims == 2 || (b.size(0) == batch && c.size(0) == batch), what,
               " batches differ: ", a.str(), ", ", b.str(), ", ", c.str());
  const GemmShape s{batch, ta ? matrix_cols(a) : matrix_rows(a),
                    tb ? matrix_rows(b) : matrix_cols(b), ta ? matrix_rows(a) : matrix_cols(a)};
  const int64_t kb = tb ? matrix_cols(b) : matrix_rows(b);
  COURSE_CHECK(s.k == kb && matrix_rows(c) == s.m && matrix_cols(c) == s.n, what,
               " shapes do not match: op(a) ", s.m, "x", s.k, ", op(b) ", kb, "x", s.n, ", c ",
               shape_str(c.shape()));
  return s;
}

// One sgemm per matrix of the batch. A batch of at least one matrix per thread (attention's
// heads) is spread over the threads, each product on one thread (oneDNN runs single-threaded
// inside a parallel region): small products spread their own work thinly over the threads.
void cpu_sgemm(const Tensor& a, bool ta, const Tensor& b, bool tb, Tensor& c, GemmShape s,
               float alpha, float beta) {
  run_host_work([=, pa = a.data_as<float>(), lda = matrix_cols(a), stride_a = matrix_size(a),
                 pb = b.data_as<float>(), ldb = matrix_cols(b), stride_b = matrix_size(b),
                 pc = c.data_as<float>(), ldc = matrix_cols(c), stride_c = matrix_size(c)] {
    const auto product = [&](int64_t i) -> int {
      return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', s.m, s.n, s.k, alpha, pa + i * stride_a,
                        lda, pb + i * stride_b, ldb, beta, pc + i * stride_c, ldc);
    };
    int status = dnnl_success;  // a failed product's status, if any (failures are positive)
    // Not an `if` clause: a parallel region of one thread around oneDNN's own parallel region
    // would make that one a nested team, whose threads then contend with the idle, spinning
    // threads of the outer team for the cores.
    if (s.batch >= omp_get_max_threads()) {
#pragma omp parallel for reduction(max : status)
      for (int64_t i = 0; i < s.batch; ++i) status = std::max(status, product(i));
    } else {
      for (int64_t i = 0; i < s.batch; ++i) status = std::max(status, product(i));
    }
    COURSE_CHECK(status == dnnl_success, "oneDNN sgemm of ", s.m, "x", s.k, " by ", s.k, "x", s.n,
                 " failed: ", dnnl_status2str(static_cast<dnnl_status_t>(status)));
  });
}

#if COURSE_WITH_CUDA
// A cuBLAS handle with the workspace it was given: cublasSetStream puts a handle back on cuBLAS's
// default workspace pool, so the workspace is set again after every stream change (as PyTorch
// does), else cuBLAS allocates its own, which a graph capture cannot record.
struct CublasHandle {
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// This thread's handle, issuing its work on the thread's current stream, with a workspace of its
// own from the device's caching allocator, held as long as the handle: 32 MiB on Hopper and
// newer, 4 MiB before (NVIDIA's advice).
cublasHandle_t cublas_handle(Device device) {
  const CublasHandle h = thread_handle<CublasHandle>(device, [device](CublasHandle* made) {
    CUBLAS_CHECK(cublasCreate(&made->handle));
    int major = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device.index));
    made->workspace_bytes = (major >= 9 ? size_t{32} : size_t{4}) << 20;
    made->workspace = device_allocator(device).allocate(made->workspace_bytes);
  });
  CUBLAS_CHECK(cublasSetStream(h.handle, static_cast<cudaStream_t>(current_cuda_stream())));
  CUBLAS_CHECK(cublasSetWorkspace(h.handle, h.workspace, h.workspace_bytes));
  return h.handle;
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands. One
// strided-batched call for the whole batch (a batch of one is a plain GEMM).
void gpu_gemm(const Tensor& a, bool ta, const Tensor& b, bool tb, Tensor& c, GemmShape s,
              float alpha, float beta) {
  check_capture_device(a.device());
  set_current_device(a.device());
  const cudaDataType type = cuda_type(a.dtype()), c_type = cuda_type(c.dtype());
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      cublas_handle(a.device()), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
      s.n, s.m, s.k, &alpha, b.data(), type, matrix_cols(b), matrix_size(b), a.data(), type,
      matrix_cols(a), matrix_size(a), &beta, c.data(), c_type, matrix_cols(c), matrix_size(c),
      s.batch, cublas_compute(a.dtype()), CUBLAS_GEMM_DEFAULT));
}

#endif

}  // namespace

namespace {

void run_gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& c,
              float alpha, float beta, int dims) {
  const GemmShape s = check_gemm(a, transpose_a, b, transpose_b, c, dims);
  // A LaunchLog's dry run of the hand-written kernels skips the library's products too.
  if (s.batch == 0 || s.m == 0 || s.n == 0 || LaunchLog::active() != nullptr) return;
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
  if (c.dtype() == DType::kF32) {
    cpu_sgemm(cast(a, DType::kF32), transpose_a, cast(b, DType::kF32), transpose_b, c, s, alpha,
              beta);
    return;
  }
  Tensor c32 = cast(c, DType::kF32);
  cpu_sgemm(cast(a, DType::kF32), transpose_a, cast(b, DType::kF32), transpose_b, c32, s, alpha,
            beta);
  copy_(c, cast(c32, c.dtype()));
}

}  // namespace

void gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& c,
          float alpha, float beta) {
  run_gemm(a, transpose_a, b, transpose_b, c, alpha, beta, 2);
  // (M, N) outputs of K products each; attention's batched products count as attention.
  MultiplyAddCount::add(static_cast<double>(c.numel()) * a.size(transpose_a ? 0 : 1));
}

void gemm_batched(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& c,
                  float alpha, float beta) {
  run_gemm(a, transpose_a, b, transpose_b, c, alpha, beta, 3);
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

void add_weight_gradient(const Tensor& grad_out, const Tensor& input, Tensor& weight_grad) {
  gemm(grad_out, true, input, false, weight_grad, 1.0f, 1.0f);
}

}  // namespace course
