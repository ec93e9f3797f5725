// One model's training step under any of the course's parallel schemes, so that a lab wires the
// scheme once: data parallelism (one process, DDP, ZeRO 1-3, FSDP's strategies, or a lab's own
// mode: data_parallel_training.h) or model parallelism on a dp x tp x pp grid
// (model_parallel_training.h). The lab picks one; its loop, checkpoints, validation and reports
// ask only this interface. A batch is inputs and their targets (common/data/token_windows.h): a
// language model's windows and next tokens, or a classifier's images and labels; the loss is the
// cross entropy of the logits' last axis.
#pragma once

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/core/error.h"
#include "common/core/step_phase.h"
#include "common/data/token_windows.h"
#include "common/nn/module.h"
#include "common/parallel/pipeline/pipeline_measurement.h"

namespace course::parallel {

class TrainingParallelism {
 public:
  virtual ~TrainingParallelism() = default;

  // The parameters this rank's optimizer updates, named as in the whole model (the names of
  // the checkpoint's tensors).
  virtual std::vector<std::pair<std::string, nn::Parameter*>> optimized() = 0;
  // The data-parallel replicas deal the training batches among themselves: this one's place
  // and their count.
  virtual int data_rank() const = 0;
  virtual int data_ranks() const = 0;
  // Micro-batches of a step (accumulated, or run through the pipeline): a step's batch holds
  // this many times the micro-batch's windows or images.
  virtual int micro_batches() const = 0;

  // One step's forward and backward over this replica's `batch`: the gradients zeroed first
  // and, after, reduced as the optimizer needs them. Returns the batch's mean loss as a (1,)
  // tensor on the batch's device; `mark` hears where the step's time goes.
  virtual Tensor forward_backward(const NextTokenBatch& batch,
                                  const std::function<void(Phase)>& mark) = 0;
  // While `local` returns true, forward_backward leaves each rank its own gradients (for an
  // optimizer that averages its own state instead: data_parallel_model.h). Data parallelism
  // without sharding can; the other schemes refuse with one message.
  virtual void keep_gradients_local_while(std::function<bool()>) {
    COURSE_FAIL(describe(),
                " reduces gradients within its grid itself; an optimizer that "
                "averages its own state over the ranks (1-bit Adam and LAMB) needs DDP or one "
                "process");
  }
  // The optimizer in backward (optimizer_in_backward.h): optimized()'s parameters in the groups
  // whose gradients become final together, and `final(group)` called for each once per step as
  // soon as they are. Data parallelism without sharding can; the other schemes refuse.
  virtual std::vector<std::vector<size_t>> gradient_groups() {
    COURSE_FAIL(describe(),
                " reduces gradients within its grid itself; the optimizer in "
                "backward needs DDP or one process");
  }
  virtual void when_gradients_final(std::function<void(size_t group)>) { gradient_groups(); }
  // After the optimizer's step, and after a resumed run loaded its state.
  virtual void after_step() = 0;
  // Collective, after forward_backward: the square of the L2 norm of the whole model's gradient
  // (of the batch's mean loss), every element counted once however the ranks hold it (shards,
  // slices, stages, replicas), as a (1,) f32 tensor on the device, the same on every rank.
  // Gradient clipping's global norm (gradient_clipping.h).
  virtual Tensor squared_gradient_norm() = 0;

  // Collective: the whole model with the current values, on every rank (validation, sampling).
  virtual nn::Module& whole_model() = 0;
  // What a checkpoint of a file per rank depends on ({"sharding": "zero3", ...}); empty when
  // every rank holds the whole model's state (one file).
  virtual nlohmann::json checkpoint_layout() const = 0;
  virtual std::string describe() const = 0;
  // So far: the bytes this rank sent, and the seconds it waited for communication that the
  // computation did not hide.
  virtual double bytes_sent() const = 0;
  virtual double exposed_communication_seconds() = 0;
  // Collective: what a pipeline measured (none for the schemes without one).
  virtual std::optional<PipelineMeasurement> pipeline_measurement() { return std::nullopt; }

  // Mixed precision's dynamic loss scale, a (1,) f32 on the device (common/optim/loss_scaler.h):
  // forward_backward multiplies the loss gradient by it, on the device; undefined (the
  // default): unscaled.
  void set_loss_scale(Tensor scale) { loss_scale_ = std::move(scale); }

 protected:
  const Tensor& loss_scale() const { return loss_scale_; }

 private:
  Tensor loss_scale_;
};

}  // namespace course::parallel
