// An image model's pieces (common/nn/model_pieces.h: stem, blocks, head) measured one at a time
// on the CPU: each distinct piece is built alone and run forward on a batch in the step's
// precision, the next piece fed its output. What the allocator holds after the forward (what the
// piece saved for backward, and its output; its activations apart from the casts of its weights,
// measured by a second forward that keeps them), its input's and output's sizes and its
// multiply-adds per image. A model too large to build whole (CoAtNet-7's 2.44B parameters) is
// measured so. The image models' memory estimate (image_memory_estimate.h) and throughput model
// (workload.h) read these figures.
#pragma once

#include <cstdint>
#include <vector>

#include "common/models/models.h"

namespace course::parallel {

// One piece at the measured batch.
struct PieceFigures {
  std::vector<int64_t> parameters;           // each parameter's elements
  int64_t saved = 0, input = 0, output = 0;  // bytes; saved: the activations, for the batch
  // Bytes of the compute-dtype copies of its weights that its forward keeps for backward
  // (Module::kept_for_backward; none in f32), whatever the batch.
  int64_t weight_casts = 0;
  int64_t output_elements = 0;  // per image
  double multiply_adds = 0;     // per image, forward
};

struct MeasuredModel {
  std::vector<PieceFigures> pieces;  // stem, each block, head
  int64_t classes = 0;
};

// `compute`: autocast's dtype (f32: none). Pieces with equal keys are measured once.
MeasuredModel measure_pieces(const nn::ModelConfig& model, int64_t batch, DType compute);

}  // namespace course::parallel
