// The fully connected layer's products with their epilogues through cuBLASLt (linear.h): the
// forward's bias (and GELU, its pre-activation kept), the weight gradient with the bias's
// gradient in the same product (BGRADB). Each shape's plan is ranked once a thread and device;
// a shape cuBLASLt has no algorithm for is said once, and the caller runs the product and its
// epilogue apart.
#include <atomic>

#include "common/kernels/linear.h"
#include "common/kernels/multiply_adds.h"
#include "common/tensor/capture.h"

#if COURSE_WITH_CUDA
#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "common/kernels/cublaslt_matmul.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/plan_cache.h"
#include "common/tensor/cuda_check.h"
#endif

namespace course {

namespace {

#if COURSE_WITH_CUDA
// The fully connected layer's product y (rows, out) = x (rows, in) W^T with its epilogue, in
// cuBLASLt's column-major terms: Y^T (out x rows) = op(A) B with A the stored W^T (in x out,
// transposed) and B the stored x^T (in x rows); the bias runs along Y^T's rows (out), as the
// BIAS epilogues broadcast it, and GELU's pre-activation is a second (out x rows) output.
// Keyed by device, dtype, compute type, epilogue, rows, in, out and the bias's dtype.
using LinearKey = std::array<int64_t, 8>;

struct ProductShape {  // an m x k by k x n product, for the messages
  int64_t m, n, k;
};

// `plan` ranked, or PlanRefused when cuBLASLt has no algorithm for its `epilogue` (named) on
// that m x k by k x n product of `dtype`.
std::unique_ptr<LtMatmul> ranked_or_refused(std::unique_ptr<LtMatmul> plan, cublasLtHandle_t handle,
                                            const std::string& epilogue, ProductShape s,
                                            DType dtype) {
  plan->rank(handle);
  if (plan->ranked.empty()) {
    throw PlanRefused("cuBLASLt has no algorithm for the " + epilogue + " epilogue of a " +
                      std::to_string(s.m) + "x" + std::to_string(s.k) + " by " +
                      std::to_string(s.k) + "x" + std::to_string(s.n) + " " +
                      std::string(dtype_name(dtype)) + " product");
  }
  return plan;
}

// The plan of `key`, ranked with the call's bias and pre-activation buffers in place (a later
// call sets its own before running).
std::unique_ptr<LtMatmul> plan_linear(const LinearKey& key, cublasLtHandle_t handle,
                                      void* epilogue_bias, void* pre_activation) {
  const auto dtype = static_cast<DType>(key[1]);
  const auto epilogue = static_cast<LinearEpilogue>(key[3]);
  const int64_t rows = key[4], in = key[5], out = key[6];
  const cudaDataType type = cuda_type(dtype);
  auto plan = std::make_unique<LtMatmul>(
      static_cast<cublasComputeType_t>(key[2]), CUDA_R_32F, LtMatmul::Layout{type, in, out, in},
      LtMatmul::Layout{type, in, rows, in}, LtMatmul::Layout{type, out, rows, out});
  plan->set(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  plan->set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cuda_type(static_cast<DType>(key[7])));
  plan->set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, epilogue_bias);
  if (epilogue == LinearEpilogue::kBiasGelu) {
    plan->set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
    plan->set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, out);
    plan->set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, pre_activation);
  } else {
    plan->set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
  }
  return ranked_or_refused(std::move(plan), handle,
                           epilogue == LinearEpilogue::kBiasGelu ? "bias + GELU" : "bias",
                           {.m = rows, .n = out, .k = in}, dtype);
}

// The parameters' gradients dW (out x in) += dy^T x and dy's column sums, in cuBLASLt's terms:
// dW^T (in x out) += A op(B) with A the stored x^T (in x rows) and B the stored dy^T (out x rows),
// transposed; BGRADB sums op(B) over the product's k (the rows) into a vector as long as D has
// columns (out), of D's type (f32 here). Keyed by device, dtype, compute type, rows, in, out.
using GradientsKey = std::array<int64_t, 6>;

std::unique_ptr<LtMatmul> plan_linear_gradients(const GradientsKey& key, cublasLtHandle_t handle,
                                                void* bias_sums) {
  const auto dtype = static_cast<DType>(key[1]);
  const int64_t rows = key[3], in = key[4], out = key[5];
  const cudaDataType type = cuda_type(dtype);
  auto plan = std::make_unique<LtMatmul>(
      static_cast<cublasComputeType_t>(key[2]), CUDA_R_32F, LtMatmul::Layout{type, in, rows, in},
      LtMatmul::Layout{type, out, rows, out}, LtMatmul::Layout{CUDA_R_32F, in, out, in});
  plan->set(CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_T);
  plan->set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BGRADB);
  plan->set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_sums);
  return ranked_or_refused(std::move(plan), handle, "bias-gradient", {.m = in, .n = out, .k = rows},
                           dtype);
}

// `t` itself, or an aligned copy: cuBLASLt's epilogue kernels read 16-byte aligned operands (the
// plans are ranked for that alignment); a view into flat parameters may start elsewhere.
Tensor aligned_16(const Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data()) % 16 == 0 ? t : t.clone();
}
#endif

std::atomic<int64_t> linear_executions{0};

#if COURSE_WITH_CUDA
// This thread's cuBLASLt handle for a call on `device`, made the current device (and checked
// against a capture in progress).
cublasLtHandle_t handle_for_call(Device device) {
  check_capture_device(device);
  set_current_device(device);
  return cublaslt_handle(device);
}

// C = op(A) op(B) + beta C by `matmul`'s chosen algorithm with its workspace, counted as one
// product with its epilogue and as `multiply_adds`.
void run_fused(LtMatmul& matmul, cublasLtHandle_t handle, Device device, const void* a,
               const void* b, float beta, void* c, double multiply_adds) {
  LibraryWorkspace workspace(device);
  matmul.take_workspace(workspace);
  const float alpha = 1.0f;
  matmul.run(handle, &alpha, a, b, &beta, c, workspace);
  MultiplyAddCount::add(multiply_adds);
  ++linear_executions;
}
#endif

}  // namespace

int64_t cublaslt_linear_executions() { return linear_executions; }

namespace detail {

#if COURSE_WITH_CUDA
bool cublaslt_linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias,
                             LinearEpilogue epilogue, Tensor& y, Tensor* pre_activation) {
  const bool gelu = epilogue == LinearEpilogue::kBiasGelu;
  const int64_t rows = x.size(0), in = x.size(1), out = w.size(0);
  // GELU's pre-activation is stored with a leading dimension cuBLASLt wants a multiple of 8.
  if (rows == 0 || (gelu && out % 8 != 0)) return false;
  cublasLtHandle_t handle = handle_for_call(x.device());
  thread_local PlanCache<LinearKey, std::unique_ptr<LtMatmul>> plans;
  LinearKey key{x.device().index,
                static_cast<int64_t>(x.dtype()),
                static_cast<int64_t>(cublas_compute(x.dtype())),
                static_cast<int64_t>(epilogue),
                rows,
                in,
                out,
                static_cast<int64_t>(bias.dtype())};
  const Tensor a = aligned_16(w), b = aligned_16(x);
  Tensor epilogue_bias = aligned_16(bias);
  Tensor pre = gelu ? Tensor::empty(y.shape(), y.dtype(), y.device()) : Tensor();
  const auto find = [&](const char* otherwise) {
    return plans.find_or_build(
        key,
        [&](const LinearKey& k) {
          return plan_linear(k, handle, epilogue_bias.data(), gelu ? pre.data() : nullptr);
        },
        [&](const std::string& reason) {
          std::fprintf(stderr, "note: %s; %s\n", reason.c_str(), otherwise);
        });
  };
  // An f32 bias beside 16-bit operands goes in as it is where cuBLASLt takes it (no cast per
  // call), else as a copy in x's dtype.
  std::unique_ptr<LtMatmul>* plan = bias.dtype() == x.dtype()
                                        ? nullptr
                                        : find("the bias is cast to the product's dtype per call");
  if (plan == nullptr && bias.dtype() != x.dtype()) {
    epilogue_bias = aligned_16(cast(bias, x.dtype()));
    key[7] = static_cast<int64_t>(x.dtype());
  }
  if (plan == nullptr) plan = find("the product and its epilogue run apart");
  if (plan == nullptr) return false;
  LtMatmul& matmul = **plan;
  matmul.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, epilogue_bias.data());
  if (gelu) matmul.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, pre.data());
  run_fused(matmul, handle, x.device(), a.data(), b.data(), 0.0f, y.data(),
            static_cast<double>(rows) * out * in);
  if (gelu) *pre_activation = pre;
  return true;
}

bool cublaslt_linear_gradients(const Tensor& grad_out, const Tensor& input, Tensor& weight_grad,
                               Tensor& bias_sums) {
  const int64_t rows = grad_out.size(0), in = input.size(1), out = grad_out.size(1);
  // The gradient is written in place: it must be f32 and aligned as the plans are ranked for.
  if (rows == 0 || weight_grad.dtype() != DType::kF32 ||
      reinterpret_cast<uintptr_t>(weight_grad.data()) % 16 != 0) {
    return false;
  }
  COURSE_CHECK(input.dim() == 2 && input.size(0) == rows && input.dtype() == grad_out.dtype() &&
                   weight_grad.shape() == Shape({out, in}) && input.device() == grad_out.device() &&
                   weight_grad.device() == input.device(),
               "add_linear_gradients: dy ", grad_out.str(), ", x ", input.str(), ", dW ",
               weight_grad.str());
  cublasLtHandle_t handle = handle_for_call(input.device());
  thread_local PlanCache<GradientsKey, std::unique_ptr<LtMatmul>> plans;
  const GradientsKey key{input.device().index,
                         static_cast<int64_t>(input.dtype()),
                         static_cast<int64_t>(cublas_compute(input.dtype())),
                         rows,
                         in,
                         out};
  std::unique_ptr<LtMatmul>* plan = plans.find_or_build(
      key,
      [&](const GradientsKey& k) { return plan_linear_gradients(k, handle, bias_sums.data()); },
      [](const std::string& reason) {
        std::fprintf(stderr, "note: %s; the product and the column sums run apart\n",
                     reason.c_str());
      });
  if (plan == nullptr) return false;
  LtMatmul& matmul = **plan;
  matmul.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_sums.data());
  const Tensor a = aligned_16(input), b = aligned_16(grad_out);
  run_fused(matmul, handle, input.device(), a.data(), b.data(), 1.0f, weight_grad.data(),
            static_cast<double>(rows) * out * in);
  return true;
}
#else
bool cublaslt_linear_forward(const Tensor& x, const Tensor&, const Tensor&, LinearEpilogue, Tensor&,
                             Tensor*) {
  COURSE_FAIL("linear_forward on ", x.device().str(), " in a build without CUDA");
}

bool cublaslt_linear_gradients(const Tensor& grad_out, const Tensor&, Tensor&, Tensor&) {
  COURSE_FAIL("add_linear_gradients on ", grad_out.device().str(), " in a build without CUDA");
}
#endif

}  // namespace detail

}  // namespace course
