// The dynamic loss scaler of mixed-precision training (as torch.cuda.amp.GradScaler with a fused
// optimizer), kept on the device so a step never waits for the host.
//
// The loss gradient is multiplied by the scale (scale_tensor(), a (1,) tensor on the device)
// before backward, so small f16 gradients do not flush to zero. Before the step,
// unscale_and_check() divides the gradients by the scale and sets found_inf() on the device where
// any is NaN or infinite; the optimizer's step(found_inf()) then skips itself there; update()
// halves the scale after an overflow (counting the skipped step) and doubles it after
// `growth_interval` clean steps in a row. DeepSpeed's `hysteresis` tolerates that many overflows
// before the scale backs off (each still skips its step), and `min_scale` floors it. Where
// ranks hold different gradients (shards, slices, stages), they agree on found_inf_slot()
// (all-reduce max) before the step, so every rank skips the same steps. Only scale() and
// skipped_steps() read the device, for reports; state() is checkpointed with the run.
//
// ZeRO-Offload (DeepSpeed's CPU Adam) checks the host's copies of the gradients, where its step
// runs: keep_state_on(the host) keeps the whole state there, and scale_tensor(device) then
// copies the scale to the device for each backward pass.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/nn/module.h"

namespace course::optim {

struct LossScalerOptions {
  float initial_scale = 65536.0f;
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int64_t growth_interval = 2000;
  int64_t hysteresis = 1;  // overflows before the scale backs off (1: at each, as PyTorch)
  float min_scale = 0.0f;  // the backed-off scale's floor

  bool operator==(const LossScalerOptions&) const = default;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerOptions& options = {});

  // Where the state is made and kept, whatever device later calls name (before its first use).
  void keep_state_on(Device home);
  // The scale, a (1,) f32 on `device`: the state's own (made there on first use, unless kept
  // elsewhere), or a copy of it made now where the state is kept on another device.
  const Tensor& scale_tensor(Device device);
  // Divides every gradient by the scale and sets found_inf() when any of them is not finite.
  void unscale_and_check(const std::vector<nn::Parameter*>& params);
  // The same check in parts, for gradients that become final group by group (the optimizer in
  // backward's first pass): found_inf() cleared on `device`, then set by any group's unscale.
  void clear_found_inf(Device device);
  void unscale_and_mark(const std::vector<nn::Parameter*>& params);
  // Divides by the scale exactly as unscale_and_check() does, leaving found_inf() as it is.
  void unscale(const std::vector<nn::Parameter*>& params);
  // (1,) f32 on the device, non-zero after an overflow in the last unscale_and_check(): the
  // optimizer's skip flag.
  const Tensor& found_inf() const;
  // The same flag, writable: for the ranks of a job to agree on it before the step.
  Tensor& found_inf_slot();
  // Adjusts the scale after the step that found_inf() describes.
  void update();

  float scale() const;            // reads the device
  int64_t skipped_steps() const;  // reads the device

  // The whole state, {scale, found_inf, clean steps, skipped, overflows tolerated}
  // (device_factor.h), made on `device` on first use (unless kept elsewhere): what a checkpoint
  // saves and a resumed run loads in place, so it goes on at the scale, streak and count where
  // it stopped.
  Tensor& state(Device device);

 private:
  LossScalerOptions options_;
  std::optional<Device> home_;        // keep_state_on()'s
  Tensor state_, scale_, found_inf_;  // the state and its views
  Tensor scale_copy_;                 // scale_tensor()'s on a device other than home_
};

}  // namespace course::optim
