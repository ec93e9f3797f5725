// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3",
// SC'11), the counter-based generator of cuRAND and PyTorch's GPU dropout: four 32-bit words
// that are a function of a 128-bit counter and a 64-bit key alone. Any thread on any device
// draws the words of any counter directly, without a generator's state to share or advance, so a
// random mask is the same on the CPU and a GPU, and can be drawn again instead of stored.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

struct PhiloxWords {
  uint32_t v[4];
};

// The words of counter (c0, c1, c2, c3) under key (k0, k1): ten rounds, each two 32 x 32 -> 64-bit
// products whose halves cross the counter's words, the key bumped by Weyl constants in between.
COURSE_HD inline PhiloxWords philox4x32(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                        uint32_t k0, uint32_t k1) {
  constexpr uint64_t kMultiplier0 = 0xD2511F53u, kMultiplier1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = kMultiplier0 * c0, p1 = kMultiplier1 * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

// The words of 64-bit counter halves and a 64-bit key.
COURSE_HD inline PhiloxWords philox4x32(uint64_t low, uint64_t high, uint64_t key) {
  return philox4x32(static_cast<uint32_t>(low), static_cast<uint32_t>(low >> 32),
                    static_cast<uint32_t>(high), static_cast<uint32_t>(high >> 32),
                    static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
}

}  // namespace course::ops
