// Channels-last max pooling on a GPU by 16-byte packets of channels: the kernels pooling.cu
// takes where the channels fill whole packets and every operand is aligned, giving the bytes of
// the per-pixel kernels of pooling_ops.h (the same windows, order, maxima, positions and sums).
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/packet.h"
#include "common/kernels/pooling_ops.h"

namespace course::ops {

// The argmax of a packet of channels: as many int32 as the packet has elements (16 or 32 bytes),
// moved 16 bytes at a time.
template <int kSize>
struct alignas(kPacketBytes) Positions {
  static constexpr int kPackets = (kSize + Packet<int32_t>::kSize - 1) / Packet<int32_t>::kSize;
  int32_t v[kPackets * Packet<int32_t>::kSize];
  COURSE_HD void load(const int32_t* from) {
    for (int k = 0; k < kPackets; ++k)
      reinterpret_cast<Packet<int32_t>*>(v)[k] = reinterpret_cast<const Packet<int32_t>*>(from)[k];
  }
  COURSE_HD void store(int32_t* to) const {
    for (int k = 0; k < kPackets; ++k)
      reinterpret_cast<Packet<int32_t>*>(to)[k] = reinterpret_cast<const Packet<int32_t>*>(v)[k];
  }
};

// Index `index` of a channels-last pass by packets of `size` channels over (n, rows, cols)
// pixels, the packets of one pixel neighbours: the pixel and the packet's first channel.
struct PacketOfPixel {
  int64_t n, row, col, c0;
};
COURSE_HD inline PacketOfPixel packet_of_pixel(int64_t index, int64_t channels, int64_t size,
                                               int64_t rows, int64_t cols) {
  const int64_t groups = channels / size, pixel = index / groups;
  return {pixel / (rows * cols), pixel / cols % rows, pixel % cols, index % groups * size};
}

// Channels-last on a GPU, the channels a multiple of a packet's elements and every operand
// aligned to packets: a thread per (output pixel, packet of channels), neighbouring threads on
// neighbouring packets of one pixel, so a warp's loads of a window element are whole 16-byte
// packets of one contiguous stretch. The same windows, order, maxima and positions as
// MaxPoolForwardChannelsLast.
template <class T>
struct MaxPoolForwardPackets {
  static constexpr int kSize = Packet<T>::kSize;
  const T* x;
  T* y;
  int32_t* argmax;
  PoolGeometry g;
  COURSE_HD int64_t indices() const { return g.n * g.oh * g.ow * (g.c / kSize); }
  COURSE_HD void operator()(int64_t index) const {
    const auto [n, oh, ow, c0] = packet_of_pixel(index, g.c, kSize, g.oh, g.ow);
    const PoolWindow window = window_of(g, oh, ow);
    const auto packet_at = [&](int64_t ih, int64_t iw) {
      return *reinterpret_cast<const Packet<T>*>(x + g.in.at(n, c0, ih, iw));
    };
    const Packet<T> first = packet_at(window.h_begin, window.w_begin);
    float best[kSize];
    Positions<kSize> where;
    for (int j = 0; j < kSize; ++j) {
      best[j] = static_cast<float>(first.v[j]);
      where.v[j] = static_cast<int32_t>(window.h_begin * g.w + window.w_begin);
    }
    for (int64_t ih = window.h_begin; ih < window.h_end; ++ih) {
      for (int64_t iw = window.w_begin; iw < window.w_end; ++iw) {
        const Packet<T> values = packet_at(ih, iw);
        const int32_t position = static_cast<int32_t>(ih * g.w + iw);
        for (int j = 0; j < kSize; ++j) {
          const float v = static_cast<float>(values.v[j]);
          where.v[j] = v > best[j] ? position : where.v[j];
          best[j] = v > best[j] ? v : best[j];
        }
      }
    }
    const int64_t at = g.out.at(n, c0, oh, ow);
    Packet<T> out;
    for (int j = 0; j < kSize; ++j) out.v[j] = T(best[j]);
    *reinterpret_cast<Packet<T>*>(y + at) = out;
    where.store(argmax + at);
  }
};

// MaxPoolBackwardChannelsLast on a GPU, as MaxPoolForwardPackets: a thread per (input pixel,
// packet of channels), dy and the positions read 16 bytes at a time; the same sums in the same
// order.
template <class T>
struct MaxPoolBackwardPackets {
  static constexpr int kSize = Packet<T>::kSize;
  const T* dy;
  const int32_t* argmax;
  T* dx;
  PoolGeometry g;
  COURSE_HD int64_t indices() const { return g.n * g.h * g.w * (g.c / kSize); }
  COURSE_HD void operator()(int64_t index) const {
    const auto [n, ih, iw, c0] = packet_of_pixel(index, g.c, kSize, g.h, g.w);
    int64_t oh_first, oh_last, ow_first, ow_last;
    windows_containing(ih, g, g.oh, oh_first, oh_last);
    windows_containing(iw, g, g.ow, ow_first, ow_last);
    const int32_t position = static_cast<int32_t>(ih * g.w + iw);
    Packet<T> sum;
    for (int j = 0; j < kSize; ++j) sum.v[j] = T(0.0f);
    for (int64_t oh = oh_first; oh <= oh_last; ++oh) {
      for (int64_t ow = ow_first; ow <= ow_last; ++ow) {
        const int64_t at = g.out.at(n, c0, oh, ow);
        const Packet<T> gradients = *reinterpret_cast<const Packet<T>*>(dy + at);
        Positions<kSize> where;
        where.load(argmax + at);
        for (int j = 0; j < kSize; ++j) {
          const float term = where.v[j] == position ? static_cast<float>(gradients.v[j]) : 0.0f;
          sum.v[j] = T(static_cast<float>(sum.v[j]) + term);
        }
      }
    }
    *reinterpret_cast<Packet<T>*>(dx + g.in.at(n, c0, ih, iw)) = sum;
  }
};

}  // namespace course::ops
