// Tensor shapes, memory formats and the strides they imply.
//
// Shapes are always logical: a 4-D activation is (N, C, H, W) whether it is stored NCHW
// ("contiguous") or NHWC ("channels-last"), as in PyTorch. The memory format only changes the
// strides, so a layer can ask for the layout it runs fastest in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace course {

using Shape = std::vector<int64_t>;

enum class MemoryFormat { kContiguous, kChannelsLast };

// Number of elements; throws on a negative dimension or an element count that overflows.
int64_t numel_of(const Shape& shape);
std::string shape_str(const Shape& shape);  // "(2, 3, 4)"
const char* memory_format_name(MemoryFormat format);

// Element strides of a dense tensor of `shape` stored in `format` (channels-last needs 4-D).
std::vector<int64_t> dense_strides(const Shape& shape, MemoryFormat format);

}  // namespace course
