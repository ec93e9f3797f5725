// The training loss kept on the device between reads: each step adds its (1,) loss to a sum
// and keeps it as the last, on the device, without waiting for it; read() brings both back in
// one copy (the training loop does so every --log-every steps) and starts a new window. On a
// GPU, reading the loss every step would stall the host on every step.
#pragma once

#include <cstdint>

#include "common/tensor/tensor.h"

namespace course::train {

class LossWindow {
 public:
  explicit LossWindow(Device device);
  void add(const Tensor& loss);  // a step's (1,) f32 loss on the window's device

  struct Reading {
    double sum = 0;  // of the window's step losses
    float last = 0;  // the window's last step's
    int64_t steps = 0;
  };
  Reading read();  // waits for the device once

 private:
  Tensor sum_and_last_;  // (2,) f32
  int64_t steps_ = 0;
};

}  // namespace course::train
