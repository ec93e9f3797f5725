// Bodies of the 2x2, stride-2 average pooling that downsamples CoAtNet's stages (Dai et al.
// 2021: the shortcut of a downsampling block, and the attention's input), shared by the CPU and
// the GPU, for either memory format. An odd last row or column is dropped (floor), as PyTorch's
// AvgPool2d(2) does. The backward gathers: each input element reads its window's gradient.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/index4.h"

namespace course::ops {

struct AvgPool2Geometry {
  int64_t c, oh, ow;  // output channels and plane; the input plane is at least 2 oh x 2 ow
  Strides4 in, out;
};

// Output element i, in (n, c, oh, ow) logical order: the mean of its 2x2 window.
template <class T>
struct AvgPool2Forward {
  const T* x;
  T* y;
  AvgPool2Geometry g;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t ow = i % g.ow, oh = i / g.ow % g.oh, ch = i / (g.ow * g.oh) % g.c;
    const int64_t n = i / (g.ow * g.oh * g.c);
    float total = 0.0f;
    for (int64_t dh = 0; dh < 2; ++dh) {
      for (int64_t dw = 0; dw < 2; ++dw) {
        total += static_cast<float>(x[g.in.at(n, ch, 2 * oh + dh, 2 * ow + dw)]);
      }
    }
    y[g.out.at(n, ch, oh, ow)] = T(0.25f * total);
  }
};

// Input element i, in (n, c, h, w) logical order of the (h, w) input plane: a quarter of its
// window's gradient, 0 in a dropped last row or column.
template <class T>
struct AvgPool2Backward {
  const T* dy;
  T* dx;
  AvgPool2Geometry g;
  int64_t h, w;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t iw = i % w, ih = i / w % h, ch = i / (w * h) % g.c, n = i / (w * h * g.c);
    const int64_t oh = ih / 2, ow = iw / 2;
    const bool pooled = oh < g.oh && ow < g.ow;
    dx[g.in.at(n, ch, ih, iw)] =
        T(pooled ? 0.25f * static_cast<float>(dy[g.out.at(n, ch, oh, ow)]) : 0.0f);
  }
};

}  // namespace course::ops
