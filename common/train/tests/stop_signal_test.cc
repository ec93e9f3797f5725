// Stop signals arriving while oneDNN's JIT kernels run: Slurm's signal may come at any moment,
// and must neither change a result nor corrupt the heap (it once did: the signal frame was
// written where a JIT kernel had pointed the stack pointer, into its own buffers).
#include "common/train/stop_signal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <thread>
#include <tuple>
#include <vector>

#include "common/kernels/conv2d.h"
#include "common/kernels/elementwise.h"
#include "common/testing/random_tensor.h"

namespace course::train {
namespace {

using testing::random_tensor;
using testing::to_floats;

// The gradients of the small network's three convolutions at batch 16 (28x28 images).
std::vector<float> convolution_gradients() {
  const Conv2dShape conv{1, 1};
  std::vector<float> all;
  uint32_t seed = 1;
  for (const auto& [in, out, size] : {std::tuple{1, 32, 28}, {32, 64, 14}, {64, 128, 7}}) {
    const Tensor x = random_tensor({16, in, size, size}, DType::kF32, Device::cpu(), seed++).tensor;
    const Tensor w = random_tensor({out, in, 3, 3}, DType::kF32, Device::cpu(), seed++).tensor;
    const Tensor dy =
        random_tensor({16, out, size, size}, DType::kF32, Device::cpu(), seed++).tensor;
    Tensor dw = zeros(w.shape());
    conv2d_backward_weights_add(dy, x, dw, conv);
    const std::vector<float> dx = to_floats(conv2d_backward_data(dy, w, x, conv));
    const std::vector<float> dw_values = to_floats(dw);
    all.insert(all.end(), dx.begin(), dx.end());
    all.insert(all.end(), dw_values.begin(), dw_values.end());
  }
  return all;
}

TEST(StopSignal, SignalsDuringConvolutionsChangeNoResult) {
  install_stop_handlers();
  const std::vector<float> expected = convolution_gradients();
  std::atomic<bool> done{false};
  int64_t sent = 0;
  std::thread sender([&] {
    while (!done.load()) {
      kill(getpid(), SIGUSR1);
      ++sent;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  int mismatches = 0;
  for (int i = 0; i < 100; ++i) {
    if (convolution_gradients() != expected) ++mismatches;
  }
  done.store(true);
  sender.join();
  EXPECT_EQ(mismatches, 0) << "of 100 backward passes under " << sent << " signals";
  EXPECT_GT(sent, 100);
  EXPECT_EQ(stop_signal(), SIGUSR1);
}

TEST(StopSignal, InstallingAgainForgetsTheSignal) {
  install_stop_handlers();
  send_stop_signal(SIGTERM);
  EXPECT_EQ(stop_signal(), SIGTERM);
  install_stop_handlers();
  EXPECT_EQ(stop_signal(), 0);
}

}  // namespace
}  // namespace course::train
