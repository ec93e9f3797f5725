// Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_) under any of the course's
// parallel schemes: the norm of the whole model's gradient as the scheme counts it
// (TrainingParallelism::gradient_norm: every element once, however its ranks hold it), then every
// gradient this rank's optimizer updates scaled by min(1, max_norm / (norm + 1e-6)). A norm that
// is not finite leaves the gradients as they are (an overflowed step, which a loss scaler skips).
#pragma once

#include <cstdint>
#include <string>

#include "common/parallel/training_parallelism.h"

namespace course::parallel {

struct ClippedStep {
  float norm = 0;  // before clipping
  bool clipped = false;
};

// Collective: between forward_backward and the optimizer's step. `max_norm` > 0.
ClippedStep clip_gradient_norm(TrainingParallelism& parallelism, float max_norm);

// A lab's clipping over a run (--clip-grad-norm): off at 0; the norms its steps saw.
class GradientClipping {
 public:
  explicit GradientClipping(float max_norm);  // throws for a negative norm
  bool on() const { return max_norm_ > 0; }
  // Collective when on: between forward_backward and the optimizer's step.
  void apply(TrainingParallelism& parallelism);
  // "gradient norm: last 0.91, largest 3.2, clipped to 1 in 4 of 10 steps"
  std::string describe() const;

 private:
  float max_norm_;
  int64_t steps_ = 0, clipped_ = 0;
  float last_norm_ = 0, largest_norm_ = 0;
};

}  // namespace course::parallel
