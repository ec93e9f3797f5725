// Reader of the IDX format of (Fashion-)MNIST: a big-endian header (magic 0x0000_TTDD with the
// element type TT and the number of dimensions DD, then DD sizes) followed by the elements.
// Files may be gzip-compressed, as Debian's dataset-fashion-mnist ships them.
#pragma once

#include <string>

#include "common/tensor/tensor.h"

namespace course {

// The u8 tensor stored in `path` (shape from the header), in pinned host memory (datasets are
// kept out of the CPU device's "max memory allocated", as they are off the GPU). Throws
// course::Error naming the path for a missing file, a header that is not IDX u8, or fewer elements
// than the header promises.
Tensor read_idx_u8(const std::string& path);

}  // namespace course
