// A lab's training step run as one graph (--cuda-graphs): captured on the first call, replayed
// on every call after, the C++ counterpart of torch.compile(mode="reduce-overhead").
//
// The step reads its batch from two static tensors that each call refills, and returns the
// loss as a device scalar that each replay rewrites. Everything else the step touches
// (parameters, gradients, optimizer state, its step scalars) already lives at fixed addresses.
// The caller runs at least one eager step first, so lazily made state exists before the
// capture, and keeps host-side work (learning rate, step count, reading the loss) outside.
#pragma once

#include <functional>
#include <optional>

#include "common/tensor/graph.h"
#include "common/tensor/tensor.h"

namespace course::train {

class StepGraph {
 public:
  // Returns the mean loss of the step on (images, labels), as a (1,) f32 device tensor.
  using Step = std::function<Tensor(const Tensor& images, const Tensor& labels)>;

  StepGraph(Device device, Step step);

  // Copies the batch into the static inputs (made, and the step captured, on the first call),
  // replays the graph and returns the step's loss. Every batch must have the first one's shape.
  const Tensor& run(const Tensor& images, const Tensor& labels);
  // Whether run() takes this batch: any batch before the capture, then those of its shape
  // (a smaller last batch of an epoch runs eagerly instead).
  bool fits(const Tensor& images, const Tensor& labels) const;
  bool captured() const { return graph_.captured(); }

 private:
  void capture(const Tensor& images, const Tensor& labels);

  Device device_;
  Step step_;
  Graph graph_;
  Tensor static_images_, static_labels_, static_loss_;
};

// What --cuda-graphs becomes on `device`, said on stderr when it is not a GPU: a recorded task
// graph replayed (the same code path, no launch overhead to save).
void note_graph_stand_in(Device device);

}  // namespace course::train
