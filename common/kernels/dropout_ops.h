// Dropout's single-source body (dropout.h), shared by the CPU and the GPU.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/packet.h"
#include "common/kernels/philox.h"

namespace course::ops {

// What decides an element's fate: kept when its word is at least `threshold` (p 2^32), and then
// multiplied by `scale` (1 / (1 - p)).
struct DropoutKeys {
  uint64_t seed, offset;
  uint32_t threshold;
  float scale;
};

// y = x times the scaled mask, an index per group of kGroup neighbouring elements (kGroup / 4
// Philox draws; the element's word depends on its index alone, not on the grouping). With
// kPackets (every operand aligned, a group one packet: a GPU's choice) a whole group is read and
// written 16 bytes at a time; otherwise, and for a last partial group, one element at a time.
template <class T, bool kPackets>
struct DropoutGroups {
  static constexpr int kGroup = Packet<T>::kSize > 4 ? Packet<T>::kSize : 4;
  const T* x;
  T* y;
  int64_t numel;
  DropoutKeys keys;
  COURSE_HD int64_t groups() const { return (numel + kGroup - 1) / kGroup; }
  COURSE_HD void operator()(int64_t group) const {
    float factor[kGroup];
    for (int d = 0; d < kGroup / 4; ++d) {
      const PhiloxWords w = philox4x32(group * (kGroup / 4) + d, keys.offset, keys.seed);
      for (int j = 0; j < 4; ++j) factor[4 * d + j] = w.v[j] >= keys.threshold ? keys.scale : 0.0f;
    }
    const int64_t first = group * kGroup;
    if (kPackets && first + kGroup <= numel) {
      const Packet<T> in = *reinterpret_cast<const Packet<T>*>(x + first);
      Packet<T> out;
      for (int j = 0; j < kGroup; ++j) out.v[j] = T(static_cast<float>(in.v[j]) * factor[j]);
      *reinterpret_cast<Packet<T>*>(y + first) = out;
      return;
    }
    const int64_t end = first + kGroup < numel ? first + kGroup : numel;
    for (int64_t e = first; e < end; ++e) y[e] = T(static_cast<float>(x[e]) * factor[e - first]);
  }
};

}  // namespace course::ops
