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

// The windows (along one axis) that contain input position `in`: [first, last] of the output.
COURSE_HD inline void windows_containing(int64_t in, const PoolGeometry& g, int64_t outputs,
                                         int64_t& first, int64_t& last) {
  const int64_t shifted = in + g.padding;  // window o covers [o*s, o*s + k) in shifted units
  first = shifted - g.kernel + 1 > 0 ? (shifted - g.kernel + g.stride) / g.stride : 0;
  last = shifted / g.stride < outputs - 1 ? shifted / g.stride : outputs - 1;
}

// Per output row (n, c, oh): the window maxima and where they were (ih * W + iw).
template <class T>
struct MaxPoolForward {
  const T* x;
  T* y;
  int32_t* argmax;  // same layout as y
  PoolGeometry g;
  COURSE_HD void operator()(int64_t row) const {
    const int64_t oh = row % g.oh, ch = (row / g.oh) % g.c, n = row / (g.oh * g.c);
    const int64_t h0 = oh * g.stride - g.padding;
    const int64_t h_begin = h0 > 0 ? h0 : 0, h_end = h0 + g.kernel < g.h ? h0 + g.kernel : g.h;
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      const int64_t w0 = ow * g.stride - g.padding;
      const int64_t w_begin = w0 > 0 ? w0 : 0, w_end = w0 + g.kernel < g.w ? w0 + g.kernel : g.w;
      float best = kNegInf;
      int32_t where = -1;
      for (int64_t ih = h_begin; ih < h_end; ++ih) {
        for (int64_t iw = w_begin; iw < w_end; ++iw) {
          const float v = static_cast<float>(x[g.in.at(n, ch, ih, iw)]);
          if (where < 0 || v > best) best = v, where = static_cast<int32_t>(ih * g.w + iw);
        }
      }
      const int64_t at = g.out.at(n, ch, oh, ow);
      y[at] = T(best);
      argmax[at] = where;
    }
  }
};

// Channels-last activations: per output pixel (n, oh, ow), every channel at once, the channel
// loop innermost over contiguous memory (the row-per-channel loop above would stride across
// it). The same windows in the same order, so the same maxima and positions.
template <class T>
struct MaxPoolForwardChannelsLast {
  const T* x;
  T* y;
  int32_t* argmax;
  PoolGeometry g;
  COURSE_HD void operator()(int64_t pixel) const {
    const int64_t ow = pixel % g.ow, oh = (pixel / g.ow) % g.oh, n = pixel / (g.ow * g.oh);
    const int64_t h0 = oh * g.stride - g.padding, w0 = ow * g.stride - g.padding;
    const int64_t h_begin = h0 > 0 ? h0 : 0, h_end = h0 + g.kernel < g.h ? h0 + g.kernel : g.h;
    const int64_t w_begin = w0 > 0 ? w0 : 0, w_end = w0 + g.kernel < g.w ? w0 + g.kernel : g.w;
    T* best = y + g.out.at(n, 0, oh, ow);
    int32_t* where = argmax + g.out.at(n, 0, oh, ow);
    for (int64_t ch = 0; ch < g.c; ++ch) where[ch] = -1;
    for (int64_t ih = h_begin; ih < h_end; ++ih) {
      for (int64_t iw = w_begin; iw < w_end; ++iw) {
        const T* in = x + g.in.at(n, 0, ih, iw);
        const int32_t position = static_cast<int32_t>(ih * g.w + iw);
        for (int64_t ch = 0; ch < g.c; ++ch) {
          if (where[ch] < 0 || static_cast<float>(in[ch]) > static_cast<float>(best[ch])) {
            best[ch] = in[ch];
            where[ch] = position;
          }
        }
      }
    }
  }
};

// Per input row (n, c, ih): each element's gradient is the sum of dy over the windows whose
// maximum it was (a gather, so no two threads write the same element).
template <class T>
struct MaxPoolBackward {
  const T* dy;
  const int32_t* argmax;
  T* dx;
  PoolGeometry g;
  COURSE_HD void operator()(int64_t row) const {
    const int64_t ih = row % g.h, ch = (row / g.h) % g.c, n = row / (g.h * g.c);
    int64_t oh_first, oh_last;
    windows_containing(ih, g, g.oh, oh_first, oh_last);
    for (int64_t iw = 0; iw < g.w; ++iw) {
      int64_t ow_first, ow_last;
      windows_containing(iw, g, g.ow, ow_first, ow_last);
      const int32_t self = static_cast<int32_t>(ih * g.w + iw);
      float total = 0.0f;
      for (int64_t oh = oh_first; oh <= oh_last; ++oh) {
        for (int64_t ow = ow_first; ow <= ow_last; ++ow) {
          const int64_t at = g.out.at(n, ch, oh, ow);
          if (argmax[at] == self) total += static_cast<float>(dy[at]);
        }
      }
      dx[g.in.at(n, ch, ih, iw)] = T(total);
    }
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
