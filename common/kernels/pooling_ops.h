// Max pooling and global average pooling bodies, shared by the CPU and the GPU, for either
// memory format. The max-pool backward gathers (each input element sums the gradients of the
// windows whose maximum it was), so no two threads write the same element. A GPU pools
// channels-last by packets of channels instead where it can (pooling_packets_ops.h).
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

// The input rows [h_begin, h_end) and columns [w_begin, w_end) of output (oh, ow)'s window, less
// what the padding clips.
struct PoolWindow {
  int64_t h_begin, h_end, w_begin, w_end;
};
COURSE_HD inline PoolWindow window_of(const PoolGeometry& g, int64_t oh, int64_t ow) {
  const int64_t h0 = oh * g.stride - g.padding, w0 = ow * g.stride - g.padding;
  return {h0 > 0 ? h0 : 0, h0 + g.kernel < g.h ? h0 + g.kernel : g.h, w0 > 0 ? w0 : 0,
          w0 + g.kernel < g.w ? w0 + g.kernel : g.w};
}

// The windows (along one axis) that contain input position `in`: [first, last] of the output.
COURSE_HD inline void windows_containing(int64_t in, const PoolGeometry& g, int64_t outputs,
                                         int64_t& first, int64_t& last) {
  const int64_t shifted = in + g.padding;  // window o covers [o*s, o*s + k) in shifted units
  first = shifted - g.kernel + 1 > 0 ? (shifted - g.kernel + g.stride) / g.stride : 0;
  last = shifted / g.stride < outputs - 1 ? shifted / g.stride : outputs - 1;
}

// Span `span` of an NCHW tensor cut into spans of `rows` rows of planes of `plane_rows` rows:
// its (n, c) plane (index and coordinates) and its first row in the plane.
struct PlaneSpan {
  int64_t plane, n, ch, first_row;
};
COURSE_HD inline PlaneSpan plane_span(int64_t span, int64_t rows, int64_t plane_rows,
                                      int64_t channels) {
  const int64_t spans_per_plane = plane_rows / rows, plane = span / spans_per_plane;
  return {plane, plane / channels, plane % channels, span % spans_per_plane * rows};
}

// The CPU loops below work on blocks of this many outputs or channels, held in local arrays:
// the compiler vectorises a loop over locals that cannot alias the tensors.
inline constexpr int64_t kPoolBlock = 16;

// f(first, count) over [begin, end) in blocks of kPoolBlock, then the rest: the whole blocks
// have a length known at compile time once f is inlined.
template <class F>
COURSE_HD void for_blocks(int64_t begin, int64_t end, F f) {
  int64_t first = begin;
  for (; first + kPoolBlock <= end; first += kPoolBlock) f(first, kPoolBlock);
  if (first < end) f(first, end - first);
}

// NCHW, per span of `rows` output rows of one (n, c) plane (the whole plane on the CPU, one row
// on the GPU): the window maxima and where they were (ih * W + iw). Each window's first
// element starts the search and a later one wins only when strictly greater (ties keep the
// first), as selects rather than branches on the data. The outputs whose windows lie inside
// the row run in blocks, the block's outputs innermost: a loop the compiler vectorises; the
// few clipped by the padding run one by one.
template <class T>
struct MaxPoolForward {
  const T* x;
  T* y;
  int32_t* argmax;  // same layout as y
  PoolGeometry g;
  int64_t rows;  // 1 or OH
  COURSE_HD void operator()(int64_t span) const {
    const auto [plane, n, ch, oh_first] = plane_span(span, rows, g.oh, g.c);
    // Outputs ow with ow * s - p >= 0 and ow * s - p + k <= W.
    int64_t inside_begin = (g.padding + g.stride - 1) / g.stride;
    int64_t inside_end =
        g.w + g.padding >= g.kernel ? (g.w + g.padding - g.kernel) / g.stride + 1 : 0;
    inside_begin = inside_begin < g.ow ? inside_begin : g.ow;
    inside_end = inside_end < inside_begin ? inside_begin : (inside_end < g.ow ? inside_end : g.ow);
    const bool halving =
        g.kernel == 2 && g.stride == 2 && g.padding == 0 && g.in.w == 1 && g.out.w == 1;
    for (int64_t oh = oh_first; oh < oh_first + rows; ++oh) {
      if (halving) {
        pool_2x2_row(n, ch, oh);
        continue;
      }
      for (int64_t ow = 0; ow < inside_begin; ++ow) pool_clipped(n, ch, oh, ow);
      for_blocks(inside_begin, inside_end,
                 [&](int64_t ow0, int64_t count) { pool_inside(n, ch, oh, ow0, count); });
      for (int64_t ow = inside_end; ow < g.ow; ++ow) pool_clipped(n, ch, oh, ow);
    }
  }
  COURSE_HD void rows_of_window(int64_t oh, int64_t& h_begin, int64_t& h_end) const {
    const int64_t h0 = oh * g.stride - g.padding;
    h_begin = h0 > 0 ? h0 : 0;
    h_end = h0 + g.kernel < g.h ? h0 + g.kernel : g.h;
  }
  // Output row oh of the 2x2 window of stride 2 without padding (the small network's two
  // poolings): the windows' pairs of adjacent columns in two input rows, one loop over the row
  // that the compiler vectorises whatever its length (a 7- or 14-wide row is shorter than one
  // block of pool_inside). The same maxima and positions as pool_inside: a, b, c, d in the
  // window's order, a later one only when strictly greater.
  COURSE_HD void pool_2x2_row(int64_t n, int64_t ch, int64_t oh) const {
    const T* top = x + g.in.at(n, ch, 2 * oh, 0);
    const T* bottom = top + g.in.h;
    const int64_t at = g.out.at(n, ch, oh, 0);
    const int32_t row = static_cast<int32_t>(2 * oh * g.w), below = static_cast<int32_t>(g.w);
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      const float a = static_cast<float>(top[2 * ow]), b = static_cast<float>(top[2 * ow + 1]);
      const float c = static_cast<float>(bottom[2 * ow]);
      const float d = static_cast<float>(bottom[2 * ow + 1]);
      float best = a;
      int32_t offset = 0;
      offset = b > best ? 1 : offset;
      best = b > best ? b : best;
      offset = c > best ? below : offset;
      best = c > best ? c : best;
      offset = d > best ? below + 1 : offset;
      best = d > best ? d : best;
      y[at + ow] = T(best);
      argmax[at + ow] = row + 2 * static_cast<int32_t>(ow) + offset;
    }
  }
  // Outputs [ow0, ow0 + count), every window whole within the row.
  COURSE_HD void pool_inside(int64_t n, int64_t ch, int64_t oh, int64_t ow0, int64_t count) const {
    int64_t h_begin, h_end;
    rows_of_window(oh, h_begin, h_end);
    const T* plane = x + g.in.at(n, ch, 0, 0);
    const int64_t w_first = ow0 * g.stride - g.padding, step = g.stride * g.in.w;
    float best[kPoolBlock];
    int32_t where[kPoolBlock];
    for (int64_t o = 0; o < count; ++o) {
      best[o] = static_cast<float>(plane[h_begin * g.in.h + w_first * g.in.w + o * step]);
      where[o] = static_cast<int32_t>(h_begin * g.w + w_first + o * g.stride);
    }
    for (int64_t ih = h_begin; ih < h_end; ++ih) {
      for (int64_t kw = 0; kw < g.kernel; ++kw) {
        const T* first = plane + ih * g.in.h + (w_first + kw) * g.in.w;
        const int32_t position = static_cast<int32_t>(ih * g.w + w_first + kw);
        const int32_t stride = static_cast<int32_t>(g.stride);
        for (int64_t o = 0; o < count; ++o) {
          const float v = static_cast<float>(first[o * step]);
          const bool greater = v > best[o];
          best[o] = greater ? v : best[o];
          where[o] = greater ? position + static_cast<int32_t>(o) * stride : where[o];
        }
      }
    }
    const int64_t at = g.out.at(n, ch, oh, ow0);
    for (int64_t o = 0; o < count; ++o) {
      y[at + o * g.out.w] = T(best[o]);
      argmax[at + o * g.out.w] = where[o];
    }
  }
  // One output whose window the padding clips.
  COURSE_HD void pool_clipped(int64_t n, int64_t ch, int64_t oh, int64_t ow) const {
    int64_t h_begin, h_end;
    rows_of_window(oh, h_begin, h_end);
    const T* plane = x + g.in.at(n, ch, 0, 0);
    const int64_t w0 = ow * g.stride - g.padding;
    const int64_t w_begin = w0 > 0 ? w0 : 0, w_end = w0 + g.kernel < g.w ? w0 + g.kernel : g.w;
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
    for_blocks(0, g.c, [&](int64_t c0, int64_t count) { pool_channels(n, oh, ow, c0, count); });
  }
  // Channels [c0, c0 + count) of one output pixel; the window's first element starts the
  // search, a later one wins only when strictly greater (ties keep the first).
  COURSE_HD void pool_channels(int64_t n, int64_t oh, int64_t ow, int64_t c0, int64_t count) const {
    const auto [h_begin, h_end, w_begin, w_end] = window_of(g, oh, ow);
    float best[kPoolBlock];
    int32_t where[kPoolBlock];
    const T* first = x + g.in.at(n, c0, h_begin, w_begin);
    for (int64_t ch = 0; ch < count; ++ch) {
      best[ch] = static_cast<float>(first[ch]);
      where[ch] = static_cast<int32_t>(h_begin * g.w + w_begin);
    }
    for (int64_t ih = h_begin; ih < h_end; ++ih) {
      for (int64_t iw = w_begin; iw < w_end; ++iw) {
        const T* in = x + g.in.at(n, c0, ih, iw);
        const int32_t position = static_cast<int32_t>(ih * g.w + iw);
        for (int64_t ch = 0; ch < count; ++ch) {
          const float v = static_cast<float>(in[ch]);
          const bool greater = v > best[ch];
          best[ch] = greater ? v : best[ch];
          where[ch] = greater ? position : where[ch];
        }
      }
    }
    const int64_t at = g.out.at(n, c0, oh, ow);
    for (int64_t ch = 0; ch < count; ++ch) {
      y[at + ch] = T(best[ch]);
      argmax[at + ch] = where[ch];
    }
  }
};

// NCHW, per span of `rows` input rows of one (n, c) plane: the whole plane on the CPU, one row
// on the GPU (whose threads want many small pieces). Each element's gradient is the sum of dy
// over the windows whose maximum it was, gathered by the one thread that owns the span, so no
// two threads write the same element. The span starts at zero; every output whose window
// overlaps it adds dy at the recorded position (ih * W + iw, the element's offset in the
// dense plane) when that falls inside the span, in the order of the windows (oh, then ow). On
// the CPU that test always passes (no misprediction) and nothing divides. The sums are in T:
// exact for f32 and for windows that do not overlap; with overlapping windows an f16/bf16
// gradient rounds after each of its (at most ceil(k/s)^2) terms.
template <class T>
struct MaxPoolBackward {
  const T* dy;
  const int32_t* argmax;
  T* dx;  // dense NCHW
  PoolGeometry g;
  int64_t rows;  // 1 or H
  COURSE_HD void operator()(int64_t span) const {
    const auto [plane, n, ch, ih_first] = plane_span(span, rows, g.h, g.c);
    const int32_t begin = static_cast<int32_t>(ih_first * g.w);
    const int32_t end = static_cast<int32_t>((ih_first + rows) * g.w);
    T* dx_plane = dx + plane * g.h * g.w;
    for (int32_t i = begin; i < end; ++i) dx_plane[i] = T(0.0f);
    int64_t oh_first, oh_last, unused;
    windows_containing(ih_first, g, g.oh, oh_first, unused);
    windows_containing(ih_first + rows - 1, g, g.oh, unused, oh_last);
    for (int64_t oh = oh_first; oh <= oh_last; ++oh) {
      const int64_t out_row = g.out.at(n, ch, oh, 0);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t at = out_row + ow * g.out.w;
        const int32_t where = argmax[at];
        if (where >= begin && where < end) {
          T& target = dx_plane[where];
          target = T(static_cast<float>(target) + static_cast<float>(dy[at]));
        }
      }
    }
  }
};

// Channels-last: per input pixel (n, ih, iw), every channel at once. The same sums in the same
// order as the row kernel above: the windows containing the pixel (oh, then ow), each adding
// dy where its recorded position is this pixel (and +0 elsewhere, which changes no sum).
template <class T>
struct MaxPoolBackwardChannelsLast {
  const T* dy;
  const int32_t* argmax;
  T* dx;
  PoolGeometry g;
  COURSE_HD void operator()(int64_t pixel) const {
    const int64_t iw = pixel % g.w, ih = (pixel / g.w) % g.h, n = pixel / (g.w * g.h);
    for_blocks(0, g.c, [&](int64_t c0, int64_t count) { gather_channels(n, ih, iw, c0, count); });
  }
  COURSE_HD void gather_channels(int64_t n, int64_t ih, int64_t iw, int64_t c0,
                                 int64_t count) const {
    int64_t oh_first, oh_last, ow_first, ow_last;
    windows_containing(ih, g, g.oh, oh_first, oh_last);
    windows_containing(iw, g, g.ow, ow_first, ow_last);
    const int32_t position = static_cast<int32_t>(ih * g.w + iw);
    T sum[kPoolBlock];
    for (int64_t ch = 0; ch < count; ++ch) sum[ch] = T(0.0f);
    for (int64_t oh = oh_first; oh <= oh_last; ++oh) {
      for (int64_t ow = ow_first; ow <= ow_last; ++ow) {
        const int64_t at = g.out.at(n, c0, oh, ow);
        for (int64_t ch = 0; ch < count; ++ch) {
          const float gradient = static_cast<float>(dy[at + ch]);  // loaded always: vectorises
          const float term = argmax[at + ch] == position ? gradient : 0.0f;
          sum[ch] = T(static_cast<float>(sum[ch]) + term);
        }
      }
    }
    T* out = dx + g.in.at(n, c0, ih, iw);
    for (int64_t ch = 0; ch < count; ++ch) out[ch] = sum[ch];
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
