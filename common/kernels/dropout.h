// Dropout's mask, drawn where the data is: element i of draw `offset` under `seed` is kept when
// word i % 4 of Philox4x32-10 (philox.h) at counter (i / 4, offset) and key `seed` is at least
// p 2^32, and then scaled by 1 / (1 - p) (inverted dropout, as PyTorch). The mask is a function of
// those numbers alone: the same on every device and thread count, so backward draws it again
// rather than keeping it, as PyTorch's fused dropout and FlashAttention do, and no mask crosses
// from the host. On a GPU a thread takes a 16-byte packet.
#pragma once

#include <cstdint>

#include "common/tensor/tensor.h"

namespace course {

struct DropoutDraw {
  uint64_t seed = 0;
  uint64_t offset = 0;  // which draw: each call of a layer takes a new one
  float p = 0.0f;       // the probability of dropping an element, in [0, 1)
};

// x times the scaled mask, element i of x's storage taking element i of the mask: dropout's
// forward on activations, and its backward on their gradient (in the same memory format).
Tensor apply_dropout(const Tensor& x, const DropoutDraw& draw);

}  // namespace course
