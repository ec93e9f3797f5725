// The optimizer step fused into the backward pass (DeepSpeed's and the slides' "backward
// fusion"; PyTorch's optimizer-in-backward with register_post_accumulate_grad_hook): each group
// of parameters is updated as soon as its gradients are final (one process: a parameter the
// moment its backward completes it; DDP: a bucket after its all-reduce, while the later buckets
// are still in flight), and its gradients are then freed. Backward makes each one again, zeroed,
// when it first adds to it, so no full set of gradients lives through a step: the peak memory
// loses them where it falls before the backward pass ends (the forward's activations).
//
// The updates are those of the unfused step, element for element: only per-step work may run in
// groups, so clipping by the global norm (which needs every gradient before any update), a loss
// scaler's skip (known only after the whole backward) and the 1-bit optimizers (whose momentum
// travels whole) are refused. With gradient accumulation the groups update in the last
// micro-batch.
#pragma once

#include "common/optim/optimizer.h"
#include "common/parallel/training_parallelism.h"

namespace course::parallel {

class OptimizerInBackward {
 public:
  // Wires `optimizer` (over parallelism.optimized()) into `parallelism`'s backward passes.
  OptimizerInBackward(optim::Optimizer& optimizer, TrainingParallelism& parallelism);
  ~OptimizerInBackward();
  OptimizerInBackward(const OptimizerInBackward&) = delete;
  OptimizerInBackward& operator=(const OptimizerInBackward&) = delete;

  // Around each step's forward_backward, in place of optimizer.step(): this step's scalars to
  // the device before it, and after it the check that every group was updated once.
  void begin_step();
  void end_step();

 private:
  optim::Optimizer& optimizer_;
  std::vector<int> updated_;  // per group, this step
};

}  // namespace course::parallel
