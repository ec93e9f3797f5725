// The loss on the device between reads.
#include "common/train/loss_window.h"

#include "common/kernels/elementwise.h"

namespace course::train {

LossWindow::LossWindow(Device device) : sum_and_last_(zeros({2}, DType::kF32, device)) {}

void LossWindow::add(const Tensor& loss) {
  COURSE_CHECK(
      loss.numel() == 1 && loss.dtype() == DType::kF32 && loss.device() == sum_and_last_.device(),
      "a step's loss is a (1,) f32 tensor on ", sum_and_last_.device().str(), ", got ", loss.str());
  Tensor sum = sum_and_last_.slice(0, 1), last = sum_and_last_.slice(1, 2);
  axpy_(1.0f, loss.view({1}), sum);
  copy_(last, loss.view({1}));
  ++steps_;
}

LossWindow::Reading LossWindow::read() {
  const std::vector<float> values = sum_and_last_.to_vector<float>();
  const Reading reading{values[0], values[1], steps_};
  fill_(sum_and_last_, 0.0);
  steps_ = 0;
  return reading;
}

}  // namespace course::train
