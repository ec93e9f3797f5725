// A mini-batch as the training step takes it.
#pragma once

#include <memory>

#include "common/tensor/tensor.h"

namespace course {

struct EncodedBatch;  // device_decode.h

struct Batch {
  Tensor images;   // (B, C, S, S) f32
  Tensor labels;   // (B,) i64
  Tensor targets;  // (B, classes) f32 soft targets of a mixed batch (MixUp, CutMix); else none
  // Instead of images and labels: the samples' JPEG bytes and draws, for the device to decode
  // and crop (a loader's batch under decode_on_device).
  std::shared_ptr<const EncodedBatch> encoded;
};

}  // namespace course
