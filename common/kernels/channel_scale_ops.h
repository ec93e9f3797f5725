// Per-channel bodies for convolutional blocks, shared by the CPU and the GPU, for either memory
// format: the squeeze-excitation's scaling of every (n, c) plane by its own factor (Hu et al.
// 2018), a per-channel bias, and the per-plane sums of a product that their gradients are.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/index4.h"

namespace course::ops {

struct PlaneGeometry {
  int64_t c, h, w;
  Strides4 strides;
  // The address of element i of the (n, c, h, w) logical order.
  COURSE_HD int64_t at(int64_t i) const {
    const int64_t iw = i % w, ih = i / w % h, ch = i / (w * h) % c, n = i / (w * h * c);
    return strides.at(n, ch, ih, iw);
  }
};

// y = x scale[n, c], scale (N, C) f32.
template <class T>
struct ChannelScale {
  const T* x;
  const float* scale;
  T* y;
  PlaneGeometry g;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t at = g.at(i);
    y[at] = T(static_cast<float>(x[at]) * scale[i / (g.h * g.w)]);
  }
};

// y += bias[c], bias (C,) f32.
template <class T>
struct ChannelBias {
  T* y;
  const float* bias;
  PlaneGeometry g;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t at = g.at(i);
    y[at] = T(static_cast<float>(y[at]) + bias[i / (g.h * g.w) % g.c]);
  }
};

// Per (n, c) plane: out[n, c] = sum over (h, w) of a b, or of a alone when b is null.
template <class T>
struct PlaneDot {
  const T* a;
  const T* b;
  float* out;
  PlaneGeometry g;
  COURSE_HD void operator()(int64_t nc) const {
    const int64_t n = nc / g.c, ch = nc % g.c;
    float total = 0.0f;
    for (int64_t ih = 0; ih < g.h; ++ih) {
      for (int64_t iw = 0; iw < g.w; ++iw) {
        const int64_t at = g.strides.at(n, ch, ih, iw);
        total += static_cast<float>(a[at]) * (b ? static_cast<float>(b[at]) : 1.0f);
      }
    }
    out[nc] = total;
  }
};

}  // namespace course::ops
