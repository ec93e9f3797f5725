// Shapes and strides.
#include "common/tensor/shape.h"

#include <limits>

#include "common/core/error.h"

namespace course {

int64_t numel_of(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    COURSE_CHECK(dim >= 0, "negative dimension in shape ", shape_str(shape));
    COURSE_CHECK(dim == 0 || count <= std::numeric_limits<int64_t>::max() / dim, "shape ",
                 shape_str(shape), " has too many elements");
    count *= dim;
  }
  return count;
}

std::string shape_str(const Shape& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return out + (shape.size() == 1 ? ",)" : ")");
}

const char* memory_format_name(MemoryFormat format) {
  return format == MemoryFormat::kChannelsLast ? "channels-last" : "contiguous";
}

std::vector<int64_t> dense_strides(const Shape& shape, MemoryFormat format) {
  std::vector<int64_t> strides(shape.size(), 1);
  if (format == MemoryFormat::kChannelsLast) {
    COURSE_CHECK(shape.size() == 4, "channels-last needs a 4-D (N, C, H, W) shape, got ",
                 shape_str(shape));
    const int64_t c = shape[1], h = shape[2], w = shape[3];
    return {h * w * c, 1, w * c, c};
  }
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape[i + 1];
  }
  return strides;
}

}  // namespace course
