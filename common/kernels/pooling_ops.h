// Max pooling and global average pooling bodies, shared by the CPU and the GPU, for either
// memory format. The max-pool backward gathers (each input element sums the gradients of the
// windows whose maximum it was), so no two threads write the same element.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/index4.h"
#include "common/kernels/reduce_ops.h"

namespace course::ops {

struct PoolGeometry {
  int64_t n, c, h, w;  // input
  int64_t oh, ow;      // output
  int64_t kernel, stride, padding;
  Strides4 in, out;
};

// Per output element i (logical order): the window maximum and where it was (ih * W + iw).
template <class T>
struct MaxPoolForward {
  const T* x;
  T* y;
  int32_t* argmax;  // same layout as y
  PoolGeometry g;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t ow = i % g.ow, oh = (i / g.ow) % g.oh, ch = (i / (g.ow * g.oh)) % g.c,
                  n = i / (g.ow * g.oh * g.c);
    float best = kNegInf;
    int32_t where = -1;
    for (int64_t kh = 0; kh < g.kernel; ++kh) {
      const int64_t ih = oh * g.stride - g.padding + kh;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t kw = 0; kw < g.kernel; ++kw) {
        const int64_t iw = ow * g.stride - g.padding + kw;
        if (iw < 0 || iw >= g.w) continue;
        const float v = static_cast<float>(x[g.in.at(n, ch, ih, iw)]);
        if (where < 0 || v > best) best = v, where = static_cast<int32_t>(ih * g.w + iw);
      }
    }
    const int64_t at = g.out.at(n, ch, oh, ow);
    y[at] = T(best);
    argmax[at] = where;
  }
};

// Per input element i (logical order): the sum of dy over the windows it was the maximum of.
template <class T>
struct MaxPoolBackward {
  const T* dy;
  const int32_t* argmax;
  T* dx;
  PoolGeometry g;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t iw = i % g.w, ih = (i / g.w) % g.h, ch = (i / (g.w * g.h)) % g.c,
                  n = i / (g.w * g.h * g.c);
    // Windows oh whose rows [oh*s - p, oh*s - p + k) contain ih.
    const int64_t first_h =
        ih + g.padding - g.kernel + 1 > 0 ? (ih + g.padding - g.kernel + g.stride) / g.stride : 0;
    const int64_t first_w =
        iw + g.padding - g.kernel + 1 > 0 ? (iw + g.padding - g.kernel + g.stride) / g.stride : 0;
    const int32_t self = static_cast<int32_t>(ih * g.w + iw);
    float total = 0.0f;
    for (int64_t oh = first_h; oh < g.oh && oh * g.stride - g.padding <= ih; ++oh) {
      for (int64_t ow = first_w; ow < g.ow && ow * g.stride - g.padding <= iw; ++ow) {
        const int64_t at = g.out.at(n, ch, oh, ow);
        if (argmax[at] == self) total += static_cast<float>(dy[at]);
      }
    }
    dx[g.in.at(n, ch, ih, iw)] = T(total);
  }
};

// Per (n, c): the mean over H x W, into a contiguous (N, C) output.
template <class T>
struct GlobalAvgPoolForward {
  const T* x;
  T* y;
  int64_t c, h, w;
  Strides4 in;
  COURSE_HD void operator()(int64_t nc) const {
    const int64_t n = nc / c, ch = nc % c;
    float total = 0.0f;
    for (int64_t ih = 0; ih < h; ++ih) {
      for (int64_t iw = 0; iw < w; ++iw) total += static_cast<float>(x[in.at(n, ch, ih, iw)]);
    }
    y[nc] = T(total / static_cast<float>(h * w));
  }
};

// Per input element: dx = dy[n, c] / (H * W).
template <class T>
struct GlobalAvgPoolBackward {
  const T* dy;
  T* dx;
  int64_t c, h, w;
  Strides4 in;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t iw = i % w, ih = (i / w) % h, ch = (i / (w * h)) % c, n = i / (w * h * c);
    dx[in.at(n, ch, ih, iw)] = T(static_cast<float>(dy[n * c + ch]) / static_cast<float>(h * w));
  }
};

}  // namespace course::ops
