// f16's dynamic loss scaling in every lab, said once: its flags under DeepSpeed's names
// (--initial-scale-power, --loss-scale-window, --hysteresis, --min-loss-scale), what they and
// f16 allow, the scaler a run makes from them, and the run's closing line. The scaler itself is
// common/optim/loss_scaler.h; the type --amp takes without --amp-dtype, fastest_amp_dtype
// (common/tensor/device.h).
#pragma once

#include <memory>
#include <vector>

#include "common/optim/loss_scaler.h"
#include "common/optim/make_optimizer.h"
#include "common/parallel/comm/communicator.h"

namespace CLI {
class App;
}  // namespace CLI

namespace course::train {

struct RunFlags;

// The scaler's flags as given (the first scale as a power of two, as DeepSpeed's).
struct LossScaleFlags {
  int initial_scale_power = 16;
  optim::LossScalerOptions scaler;  // its initial_scale is set from initial_scale_power

  bool operator==(const LossScaleFlags&) const = default;
};

void add_loss_scale_flags(CLI::App& app, LossScaleFlags& flags);

// --amp in f16: the loss is scaled and an overflowed step skipped.
bool loss_scaled(const RunFlags& flags);

// The scaler's flags only with f16, and a finite first scale (the scaler checks the rest when it
// is made); throws Error.
void validate_loss_scale_flags(const RunFlags& flags);

// The step's skip flag: the gradients divided by the scale and checked for inf and NaN, then,
// where the ranks hold different gradients (shards, slices, stages, a 1-bit optimizer's local
// ones), the flag all-reduced (max) over `ranks` so that every rank skips alike (none: the
// gradients are the same on every rank, or there is one).
const Tensor& unscale_and_agree(optim::LossScaler& scaler,
                                const std::vector<nn::Parameter*>& params,
                                parallel::Communicator* ranks);

// The run's scaler: one with f16, none otherwise.
std::unique_ptr<optim::LossScaler> make_loss_scaler(const RunFlags& flags);

// "loss scale 1048576, 4 step(s) skipped" on the lead rank (nothing without a scaler). Every rank
// calls it: it reads the device, and the ranks' scalers agree.
void print_loss_scaling(const optim::LossScaler* scaler, bool lead);

}  // namespace course::train
