// 16-byte packets of neighbouring elements: a GPU thread that reads and writes each operand 16
// bytes at a time keeps 8x the bytes of a 2-byte load in flight, which the memory-bound passes
// need to approach the memory's bandwidth (batch norm's NCHW maps, the elementwise kernels).
#pragma once

#include <cstdint>

namespace course::ops {

inline constexpr int kPacketBytes = 16;

template <class T>
struct alignas(kPacketBytes) Packet {
  static constexpr int kSize = kPacketBytes / static_cast<int>(sizeof(T));
  T v[kSize];
};

// Whether `p` may be read or written as packets.
inline bool packet_aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % kPacketBytes == 0;
}

}  // namespace course::ops
