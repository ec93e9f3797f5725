// One cuBLASLt matrix product as its users plan it: the operation's and the matrices'
// descriptors, cuBLASLt's heuristic candidates for them (up to eight, each within 32 MiB of
// workspace), and the first that is usable and whose workspace can be had (algorithm_choice.h).
// A user makes one per shape and thread, sets what its product needs (transposes, an epilogue)
// on `op`, ranks it once and chooses again whenever the workspace cannot be had. Include only
// from code compiled with COURSE_WITH_CUDA (with //common/tensor:cuda_check).
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "common/kernels/algorithm_choice.h"
#include "common/kernels/library_handle.h"
#include "common/kernels/library_workspace.h"
#include "common/tensor/dtype.h"

namespace course {

// The cuBLAS data type of `dtype`, and the compute type its products use: TF32 tensor cores for
// f32 only where --tf32-matmul allows it (gemm.cc).
cudaDataType cuda_type(DType dtype);
cublasComputeType_t cublas_compute(DType dtype);

// This thread's cuBLASLt handle for `device`.
inline cublasLtHandle_t cublaslt_handle(Device device) {
  return thread_handle<cublasLtHandle_t>(
      device, [](cublasLtHandle_t* h) { CUBLAS_CHECK(cublasLtCreate(h)); });
}

struct LtMatmul {
  // Column-major layouts (rows, cols, leading dimension) of A, B and C = D (D is written over C).
  struct Layout {
    cudaDataType type;
    int64_t rows, cols, ld;
  };

  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> ranked;
  std::optional<size_t> chosen;

  LtMatmul(cublasComputeType_t compute, cudaDataType scale, Layout la, Layout lb, Layout lc) {
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, compute, scale));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a, la.type, la.rows, la.cols, la.ld));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b, lb.type, lb.rows, lb.cols, lb.ld));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c, lc.type, lc.rows, lc.cols, lc.ld));
  }
  ~LtMatmul() {
    for (cublasLtMatrixLayout_t layout : {a, b, c}) cublasLtMatrixLayoutDestroy(layout);
    cublasLtMatmulDescDestroy(op);
  }
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  template <class Value>
  void set(cublasLtMatmulDescAttributes_t attribute, const Value& value) {
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, attribute, &value, sizeof(value)));
  }

  // cuBLASLt's candidates for the descriptors as they now are (none: it has no algorithm).
  void rank(cublasLtHandle_t handle) {
    constexpr size_t kMaxWorkspace = size_t{32} << 20;
    constexpr int kCandidates = 8;
    cublasLtMatmulPreference_t preference;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference,
                                                      CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &kMaxWorkspace, sizeof(kMaxWorkspace)));
    // Operands are 16-byte aligned (their users see to it), not the 256 bytes cuBLASLt assumes
    // unless told: an algorithm that needs more would fail on them.
    const uint32_t alignment = 16;
    for (cublasLtMatmulPreferenceAttributes_t attribute :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &alignment,
                                                        sizeof(alignment)));
    }
    ranked.resize(kCandidates);
    int returned = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        handle, op, a, b, c, c, preference, kCandidates, ranked.data(), &returned);
    cublasLtMatmulPreferenceDestroy(preference);
    ranked.resize(status == CUBLAS_STATUS_SUCCESS ? returned : 0);
  }

  // Takes the workspace of the chosen candidate, choosing again (and taking none when no
  // candidate's can be had: cuBLASLt's own default algorithm then runs without one).
  void take_workspace(LibraryWorkspace& workspace) {
    if (chosen && workspace.take(ranked[*chosen].workspaceSize)) return;
    std::vector<AlgorithmCandidate> candidates;
    for (size_t i = 0; i < ranked.size(); ++i) {
      candidates.push_back(
          {static_cast<int>(i), ranked[i].state == CUBLAS_STATUS_SUCCESS, ranked[i].workspaceSize});
    }
    chosen = choose_algorithm(candidates, [&](size_t bytes) { return workspace.take(bytes); });
    if (!chosen) workspace.take(0);
  }

  // D = alpha op(A) op(B) + beta C on the thread's current stream, C and D one buffer.
  void run(cublasLtHandle_t handle, const void* alpha, const void* a_data, const void* b_data,
           const void* beta, void* c_data, const LibraryWorkspace& workspace) const {
    CUBLAS_CHECK(cublasLtMatmul(handle, op, alpha, a_data, a, b_data, b, beta, c_data, c, c_data, c,
                                chosen ? &ranked[*chosen].algo : nullptr, workspace.data(),
                                workspace.bytes(),
                                static_cast<cudaStream_t>(current_cuda_stream())));
  }
};

}  // namespace course
