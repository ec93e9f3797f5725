// Addressing of 4-D (N, C, H, W) tensors in either memory format, for per-element kernels.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/tensor/tensor.h"

namespace course {

// Element strides of a 4-D tensor, for (N, C, H, W) in that logical order.
struct Strides4 {
  int64_t n, c, h, w;
  COURSE_HD int64_t at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return in * n + ic * c + ih * h + iw * w;
  }
};

// (N, C, H, W) sizes with the tensor's strides; checks the tensor is 4-D.
struct Dims4 {
  int64_t n, c, h, w;
  Strides4 strides;
};

inline Dims4 dims4(const Tensor& t, const char* op) {
  COURSE_CHECK(t.dim() == 4, op, " needs a 4-D (N, C, H, W) tensor, got ", t.str());
  const auto& s = t.strides();
  return {t.size(0), t.size(1), t.size(2), t.size(3), {s[0], s[1], s[2], s[3]}};
}

}  // namespace course
