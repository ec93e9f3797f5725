// Max pooling and global average pooling bodies, shared by the CPU and the GPU, for either
// memory format. The max-pool backward gathers (each input element sums the gradients of the
// windows whose maximum it was), so no two threads write the same element.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/index4.h"

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
    const T* plane = x + g.in.at(n, ch, 0, 0);
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      const int64_t w0 = ow * g.stride - g.padding;
      const int64_t w_begin = w0 > 0 ? w0 : 0, w_end = w0 + g.kernel < g.w ? w0 + g.kernel : g.w;
      // The window's first element starts the search; a later one wins only when strictly
      // greater (ties keep the first), as selects rather than branches on the data.
      float best = static_cast<float>(plane[h_begin * g.in.h + w_begin * g.in.w]);
      int32_t where = static_cast<int32_t>(h_begin * g.w + w_begin);
      for (int64_t ih = h_begin; ih < h_end; ++ih) {
        for (int64_t iw = w_begin; iw < w_end; ++iw) {
          const float v = static_cast<float>(plane[ih * g.in.h + iw * g.in.w]);
          const bool greater = v > best;
          best = greater ? v : best;
          where = greater ? static_cast<int32_t>(ih * g.w + iw) : where;
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
// maximum it was (a gather, so no two threads write the same element). The row starts at zero;
// each output row whose windows overlap it adds dy where the recorded position falls inside
// the row, in the order of the windows (oh, then ow), with no division per element. The sums
// are in T: exact for f32 and for windows that do not overlap; with overlapping windows an
// f16/bf16 gradient rounds after each of its (at most ceil(k/s)^2) terms.
template <class T>
struct MaxPoolBackward {
  const T* dy;
  const int32_t* argmax;
  T* dx;
  PoolGeometry g;
  COURSE_HD void operator()(int64_t row) const {
    const int64_t ih = row % g.h, ch = (row / g.h) % g.c, n = row / (g.h * g.c);
    T* dx_row = dx + g.in.at(n, ch, ih, 0);
    for (int64_t iw = 0; iw < g.w; ++iw) dx_row[iw * g.in.w] = T(0.0f);
    int64_t oh_first, oh_last;
    windows_containing(ih, g, g.oh, oh_first, oh_last);
    const int32_t row_begin = static_cast<int32_t>(ih * g.w);
    const int32_t row_end = static_cast<int32_t>(row_begin + g.w);
    for (int64_t oh = oh_first; oh <= oh_last; ++oh) {
      const int64_t out_row = g.out.at(n, ch, oh, 0);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t at = out_row + ow * g.out.w;
        const int32_t where = argmax[at];
        if (where >= row_begin && where < row_end) {
          T& target = dx_row[(where - row_begin) * g.in.w];
          target = T(static_cast<float>(target) + static_cast<float>(dy[at]));
        }
      }
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

// Per (n, c): dx = dy[n, c] / (H * W) over the plane.
template <class T>
struct GlobalAvgPoolBackward {
  const T* dy;
  T* dx;
  int64_t c, h, w;
  Strides4 in;
  COURSE_HD void operator()(int64_t nc) const {
    const int64_t n = nc / c, ch = nc % c;
    const T value = T(static_cast<float>(dy[nc]) / static_cast<float>(h * w));
    for (int64_t ih = 0; ih < h; ++ih) {
      for (int64_t iw = 0; iw < w; ++iw) dx[in.at(n, ch, ih, iw)] = value;
    }
  }
};

}  // namespace course::ops
