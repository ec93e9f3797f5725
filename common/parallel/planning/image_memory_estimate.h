// Where one rank's memory goes in an image model's training step (ViT, CoAtNet), before
// running it, for any preset, batch, compute precision, activation checkpointing, optimizer and
// data-parallel mode on any number of ranks, itemised as the GPT's estimate (memory_estimate.h).
// A convolutional network's activations have no closed form as short as a transformer's, so
// they are measured (piece_measurement.h): each distinct piece of the model (stem, block shape,
// head) is built alone on the CPU and run forward in the step's precision, and what the
// allocator holds after it (what the piece saved for backward, and its output) is counted for
// as many blocks as share the shape. The pieces run on the whole batch where its activations fit in
// 2 GiB here, so the allocator's rounding is measured too; else on one image, scaled to the batch.
// A model too large to build whole (CoAtNet-7's 2.44B parameters) is measured piece by piece; the
// parameters, gradients, optimizer states and communication buffers follow from each piece's
// parameter shapes. The day-4 lab checks the estimate against the allocator's measured peak
// (image_lab_test).
#pragma once

#include <cstdint>

#include "common/models/models.h"
#include "common/parallel/planning/memory_estimate.h"

namespace course::parallel {

struct ImageMemoryPlan {
  nn::ModelConfig model;                // name, channels, classes and image size
  int64_t batch = 1;                    // images per rank
  DType compute = DType::kF32;          // autocast's dtype (f32: no autocast)
  bool checkpoint_activations = false;  // each block keeps its input, one block recomputes
  StatePlan state;
};

MemoryEstimate estimate_image_memory(const ImageMemoryPlan& plan);

}  // namespace course::parallel
