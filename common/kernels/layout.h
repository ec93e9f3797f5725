// Memory-format conversion: NCHW ("contiguous") <-> NHWC ("channels-last").
#pragma once

#include "common/tensor/tensor.h"

namespace course {

// A copy of the 4-D tensor `x` stored in `format` (the same tensor if it already is).
Tensor to_memory_format(const Tensor& x, MemoryFormat format);

// A copy of the 4-D floating tensor `x` in `dtype`, stored in `format`, in one pass (x itself when
// it already is both): a convolution's compute weights, cast and relaid together.
Tensor to_dtype_and_format(const Tensor& x, DType dtype, MemoryFormat format);

// out (f32, 4-D, contiguous) += x (any floating dtype, either format) element by element of the
// same (n, c, h, w), in one launch: mixed precision's f32 accumulation of a 16-bit result.
void accumulate_f32_(Tensor& out, const Tensor& x);

}  // namespace course
