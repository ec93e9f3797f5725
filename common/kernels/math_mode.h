// Which arithmetic the GPU libraries may use, as PyTorch's switches set it:
// torch.backends.cudnn.allow_tf32 (convolutions; on by default) and
// torch.backends.cuda.matmul.allow_tf32 (GEMMs; off by default). TF32 keeps f32's range with a
// 10-bit mantissa on the tensor cores of Ampere and later GPUs. 16-bit data always runs on the
// tensor cores (f32 accumulation); f32 data never computes in 16 bits.
// The labs set these from --[no-]tf32-conv and --[no-]tf32-matmul; the CPU ignores them.
#pragma once

#include "common/tensor/dtype.h"

namespace course {

struct Tf32Switches {
  bool conv = true;
  bool matmul = false;
};
void set_tf32_switches(Tf32Switches switches);
Tf32Switches tf32_switches();

// The switches set for one scope, the previous ones restored at its end (a test comparing f32
// against an f32 reference runs strict: TF32's 10-bit mantissa is off by about 1e-3).
class ScopedTf32Switches {
 public:
  explicit ScopedTf32Switches(Tf32Switches switches) : previous_(tf32_switches()) {
    set_tf32_switches(switches);
  }
  ~ScopedTf32Switches() { set_tf32_switches(previous_); }
  ScopedTf32Switches(const ScopedTf32Switches&) = delete;
  ScopedTf32Switches& operator=(const ScopedTf32Switches&) = delete;

 private:
  Tf32Switches previous_;
};

enum class LibraryMath {
  kStrictF32,   // f32 in f32 (CUDNN_FMA_MATH, CUBLAS_COMPUTE_32F_PEDANTIC-like: no tensor cores)
  kTf32,        // f32 data, TF32 tensor cores (CUDNN_DEFAULT_MATH, CUBLAS_COMPUTE_32F_FAST_TF32)
  kTensorOp16,  // f16/bf16 data on the tensor cores, f32 accumulation (CUDNN_TENSOR_OP_MATH)
};
// The math of a convolution or GEMM on `dtype` data when TF32 is `allowed` for it.
LibraryMath library_math(DType dtype, bool allowed);

}  // namespace course
