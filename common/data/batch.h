// A mini-batch as the training step takes it.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

struct Batch {
  Tensor images;   // (B, C, S, S) f32
  Tensor labels;   // (B,) i64
  Tensor targets;  // (B, classes) f32 soft targets of a mixed batch (MixUp, CutMix); else none
};

}  // namespace course
