// Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_): every gradient scaled by
// min(1, max_norm / (norm + 1e-6)), where norm is the L2 norm of the whole model's gradient. A
// norm that is not finite leaves the gradients as they are: an overflowed mixed-precision step,
// which the loss scaler then skips. The norm, the factor and the run's record of them stay on
// the gradients' device (common/kernels/device_factor.h), so a clipped step never waits for the
// host; they are read only when reported. How the norm is counted depends on who holds the
// gradient: here for gradients every rank holds whole (one process, DDP after its average); the
// parallel schemes count theirs in common/parallel/gradient_clipping.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/nn/module.h"

namespace course::optim {

// The sum of the squares of `parameters`' gradients, accumulated in f32 into a (1,) tensor on
// their device (the CPU when there are none).
Tensor squared_gradient_sum(const std::vector<nn::Parameter*>& parameters);

// A lab's clipping over a run (--clip-grad-norm): off without a norm; the norms its steps saw.
class GradientClipping {
 public:
  explicit GradientClipping(std::optional<float> max_norm);  // throws for a norm not above 0
  bool on() const { return max_norm_ > 0; }
  // When on (collective when `squared_global_norm` is): clips `parameters` (those this rank
  // updates) to the global norm whose square `squared_global_norm()` returns as a (1,) f32
  // tensor on their device. Gradients still multiplied by a loss scale (`loss_scale`, a (1,) f32
  // on the device, as the loss scaler keeps it) are clipped to max_norm x scale, which is
  // clipping the unscaled ones to max_norm: the scale is a power of two, so the products are
  // exact, and the norm recorded is the unscaled one. Between the backward pass and the
  // optimizer's step.
  void apply(const std::function<Tensor()>& squared_global_norm,
             const std::vector<nn::Parameter*>& parameters, const Tensor& loss_scale = Tensor());
  // The gradients of a model that every rank holds whole (one process, or DDP's replicas
  // after the average): their own norm is the global one.
  void apply_to_whole(const std::vector<nn::Parameter*>& parameters,
                      const Tensor& loss_scale = Tensor());
  // The last step's norm (none before the first clipped step, or when off). Reads the device.
  std::optional<float> last_norm() const;
  // The norms of the steps since the last call, in order (one read of the device).
  std::vector<float> take_norms();
  int64_t clipped_steps() const;  // reads the device
  // "gradient norm: last 0.91, largest 3.2, clipped to 1 in 4 of 10 steps" (reads the device)
  std::string describe() const;

 private:
  std::vector<float> record() const;  // {last norm, largest, clipped steps, steps}

  float max_norm_;
  Tensor factor_;  // (1,) f32, the last step's
  Tensor record_;  // (4,) f32, see record()
  Tensor norms_;   // f32, the norms not yet taken in its first `pending_` elements
  int64_t pending_ = 0;
};

}  // namespace course::optim
