// Memory-format conversion: NCHW ("contiguous") <-> NHWC ("channels-last").
#pragma once

#include "common/tensor/tensor.h"

namespace course {

// A copy of the 4-D tensor `x` stored in `format` (the same tensor if it already is).
Tensor to_memory_format(const Tensor& x, MemoryFormat format);

}  // namespace course
