// The training step as a graph.
#include "common/train/step_graph.h"

#include <cstdio>

#include "common/kernels/elementwise.h"

namespace course::train {

StepGraph::StepGraph(Device device, Step step)
    : device_(device), step_(std::move(step)), graph_(device) {}

void StepGraph::capture(const Tensor& images, const Tensor& labels) {
  static_images_ = images.to(device_);
  static_labels_ = labels.to(device_);
  graph_.capture([&] { static_loss_ = step_(static_images_, static_labels_); });
}

bool StepGraph::fits(const Tensor& images, const Tensor& labels) const {
  return !captured() || (images.shape() == static_images_.shape() &&
                         images.memory_format() == static_images_.memory_format() &&
                         labels.shape() == static_labels_.shape());
}

void note_graph_stand_in(Device device) {
  if (device.is_cuda()) return;
  std::fprintf(stderr,
               "--cuda-graphs: CUDA graphs need a GPU; on %s the step is recorded as a task graph "
               "and replayed instead (the same code path, no launch overhead to save)\n",
               device.str().c_str());
}

const Tensor& StepGraph::run(const Tensor& images, const Tensor& labels) {
  if (!captured()) capture(images, labels);
  COURSE_CHECK(fits(images, labels), "the step was captured for ", static_images_.str(),
               ", not for ", images.str());
  copy_(static_images_, images);
  copy_(static_labels_, labels);
  graph_.replay();
  return static_loss_;
}

}  // namespace course::train
