// Bodies of the relative position bias of CoAtNet's attention (Dai et al. 2021, eq. 3), shared
// by the CPU and the GPU. The tokens of an h x w grid attend with an added bias that depends only
// on their offset: bias[head, q, k] = table[head, (dy + h - 1) (2w - 1) + dx + w - 1], dy and dx
// the rows and columns from key k to query q. The backward gathers too: each table entry sums
// the (query, key) pairs at its offset, so no two threads write the same entry.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

struct RelativeGrid {
  int64_t h, w;
  COURSE_HD int64_t tokens() const { return h * w; }
  COURSE_HD int64_t offsets() const { return (2 * h - 1) * (2 * w - 1); }
};

// Element i of the (heads, T, T) f32 bias.
struct RelativeBiasGather {
  const float* table;  // (heads, offsets)
  float* bias;
  RelativeGrid grid;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t t = grid.tokens(), head = i / (t * t), q = i / t % t, k = i % t;
    const int64_t dy = q / grid.w - k / grid.w + grid.h - 1,
                  dx = q % grid.w - k % grid.w + grid.w - 1;
    bias[i] = table[head * grid.offsets() + dy * (2 * grid.w - 1) + dx];
  }
};

// Entry i of the (heads, offsets) table gradient: += the bias gradient summed over its pairs.
struct RelativeBiasScatter {
  const float* bias_grad;  // (heads, T, T)
  float* table_grad;
  RelativeGrid grid;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t t = grid.tokens(), head = i / grid.offsets(), offset = i % grid.offsets();
    const int64_t dy = offset / (2 * grid.w - 1) - (grid.h - 1);
    const int64_t dx = offset % (2 * grid.w - 1) - (grid.w - 1);
    const float* plane = bias_grad + head * t * t;
    float total = 0.0f;
    for (int64_t qy = dy > 0 ? dy : 0; qy < grid.h && qy - dy < grid.h; ++qy) {
      for (int64_t qx = dx > 0 ? dx : 0; qx < grid.w && qx - dx < grid.w; ++qx) {
        total += plane[(qy * grid.w + qx) * t + (qy - dy) * grid.w + qx - dx];
      }
    }
    table_grad[i] += total;
  }
};

}  // namespace course::ops
