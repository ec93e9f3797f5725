// The optimizer step fused into the backward pass (DeepSpeed's and the slides' "backward
// fusion"; PyTorch's optimizer-in-backward with register_post_accumulate_grad_hook): each group
// of parameters is updated as soon as its gradients are final (one process: a parameter the
// moment its backward completes it; DDP: a bucket after its all-reduce, while the later buckets
// are still in flight), and its gradients are then freed. Backward makes each one again, zeroed,
// when it first adds to it, so no full set of gradients lives through a step: the peak memory
// loses them where it falls before the backward pass ends (the forward's activations).
//
// The updates are those of the unfused step, element for element: only per-step work may run in
// groups, so clipping by the global norm (which needs every gradient before any update) and the
// 1-bit optimizers (whose momentum travels whole) are refused. With gradient accumulation the
// groups update in the last micro-batch.
//
// f16's loss scaler skips a step when any gradient overflowed, which is known only once the
// last group is final, after the earlier ones were updated. loss_scaled_step() therefore runs
// the step's passes twice, as LOMO does for its global checks: the first checks each group's
// unscaled gradients as they become final and frees them, updating nothing; the ranks agree on
// the flag; the second updates each group, skipped on the device when the flag is set. The
// memory saving stays whole, for one more forward and backward (and DDP's all-reduces) per
// step; the updates are still those of the usual f16 step, element for element.
#pragma once

#include <functional>
#include <vector>

#include "common/optim/loss_scaler.h"
#include "common/optim/optimizer.h"
#include "common/parallel/comm/communicator.h"
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

  // A group's gradients, final, before anything else touches them.
  using GroupGradients = std::function<void(const std::vector<nn::Parameter*>&)>;
  // The whole f16 step, in place of begin_step(), `passes` (the step's forward_backward, which
  // returns its loss) and end_step(): the two passes above, `scaler`'s flag agreed (max) over
  // `ranks` when given, then the scale updated. `inspect` sees each group's gradients in the
  // first pass before they are checked (an overflow drill). The optimizers that cannot skip on
  // the device (LARS, LAMB) have the flag read on the host, as their step() does, and an
  // overflowed step then runs no second pass. Returns the first pass's loss.
  Tensor loss_scaled_step(const std::function<Tensor()>& passes, optim::LossScaler& scaler,
                          Communicator* ranks, const GroupGradients& inspect = {});

 private:
  // The next pass: each final group handed to `visit`, then updated unless only `checking`.
  void begin_pass(bool checking, GroupGradients visit, Tensor skip_if);
  void end_pass(const char* what);
  void gradients_final(size_t group);
  // The first pass of loss_scaled_step(): every group unscaled and checked, nothing updated.
  Tensor check_pass(const std::function<Tensor()>& passes, optim::LossScaler& scaler,
                    const GroupGradients& inspect);

  optim::Optimizer& optimizer_;
  TrainingParallelism& parallelism_;
  std::vector<int> final_;  // per group, in this pass
  bool checking_ = false;
  GroupGradients visit_;
  Tensor skip_if_;
};

}  // namespace course::parallel
