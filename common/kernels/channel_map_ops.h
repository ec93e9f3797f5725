// A per-channel map over the elements of an NCHW or NHWC tensor, out = map(channel, a, b), in
// the two forms its devices want (batch norm's elementwise passes are such maps):
//   - ChannelRows, a row kernel over storage rows (an (n, c) plane of H*W values in NCHW, a
//     pixel of C values in NHWC): the CPU's form, where an NCHW row loads its channel's
//     constants once and vectorises, and the GPU's for NHWC;
//   - ChannelPackets, for NCHW on a GPU: each index takes one packet of neighbouring elements in
//     storage order, every operand read and written 16 bytes at a time. A warp per plane with
//     2-byte loads of bf16 keeps too few bytes in flight: on an H200 this form made ResNet-50's
//     training step 5-7% faster in NCHW. A packet's elements mostly share their plane's
//     channel, so their constants come from one address; a packet may still span two planes
//     (7 x 7 = 49 elements a plane), which ChannelCursor follows. In NHWC a packet's elements
//     are 8 channels, whose constants each thread loads from 8 addresses (measured slower
//     there: 23.5 against 20.4 ms of kernels over two steps).
// Both forms make the same arithmetic per element, so they give the same bits.
//
// A Map has a Constants type, COURSE_HD Constants constants(int64_t channel) const, and
// COURSE_HD T apply(T a, T b, const Constants&) const: the output element from the two inputs'
// elements (a single-input map ignores b, passed the same tensor).
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/packet.h"

namespace course::ops {

// A dense tensor's layout as per-channel passes see it.
struct ChannelLoop {
  int64_t n, c, hw;
  bool channels_last;

  COURSE_HD int64_t count() const { return n * hw; }  // elements per channel
  COURSE_HD int64_t numel() const { return n * c * hw; }
  COURSE_HD int64_t rows() const { return channels_last ? n * hw : n * c; }
  COURSE_HD int64_t row_length() const { return channels_last ? c : hw; }
};

template <class T, class Map>
struct ChannelRows {
  const T* a;
  const T* b;
  T* out;
  ChannelLoop loop;
  Map map;
  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    const int64_t length = loop.row_length(), base = row * length;
    if (loop.channels_last) {
      lanes.for_each(length, [&](int64_t ch) {
        out[base + ch] = map.apply(a[base + ch], b[base + ch], map.constants(ch));
      });
      return;
    }
    const typename Map::Constants k = map.constants(row % loop.c);
    lanes.for_each(length,
                   [&](int64_t j) { out[base + j] = map.apply(a[base + j], b[base + j], k); });
  }
};

// The channel of storage index `at` of a dense NCHW tensor with planes of hw elements, advanced
// one element at a time.
struct ChannelCursor {
  int64_t c, hw, channel, offset;  // offset: within the channel's plane
  COURSE_HD ChannelCursor(int64_t c_, int64_t hw_, int64_t at)
      : c(c_), hw(hw_), channel(at / hw_ % c_), offset(at % hw_) {}
  COURSE_HD void next() {
    if (++offset < hw) return;
    offset = 0;
    channel = channel + 1 == c ? 0 : channel + 1;
  }
};

template <class T, class Map>
struct ChannelPackets {
  const T* a;
  const T* b;
  T* out;
  ChannelLoop loop;  // NCHW
  Map map;

  static constexpr int kSize = Packet<T>::kSize;
  COURSE_HD int64_t packets() const { return (loop.numel() + kSize - 1) / kSize; }

  COURSE_HD void operator()(int64_t packet) const {
    const int64_t first = packet * kSize, numel = loop.numel();
    ChannelCursor cursor(loop.c, loop.hw, first);
    if (first + kSize <= numel) {
      const Packet<T> pa = *reinterpret_cast<const Packet<T>*>(a + first);
      const Packet<T> pb = *reinterpret_cast<const Packet<T>*>(b + first);
      Packet<T> result;
      for (int j = 0; j < kSize; ++j, cursor.next())
        result.v[j] = map.apply(pa.v[j], pb.v[j], map.constants(cursor.channel));
      *reinterpret_cast<Packet<T>*>(out + first) = result;
      return;
    }
    for (int64_t e = first; e < numel; ++e, cursor.next())
      out[e] = map.apply(a[e], b[e], map.constants(cursor.channel));
  }
};

}  // namespace course::ops
