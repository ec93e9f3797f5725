// f16's loss scaling in every lab: its flags, their checks and the run's scaler (loss_scaling.h).
#include "common/train/loss_scaling.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <string>

#include "common/train/lab_flags.h"

namespace course::train {

void add_loss_scale_flags(CLI::App& app, LossScaleFlags& flags) {
  const std::string f16 = "--amp-dtype f16: ";
  app.add_option("--initial-scale-power", flags.initial_scale_power,
                 f16 + "the loss scale starts at 2^this")
      ->capture_default_str();
  app.add_option("--loss-scale-window", flags.scaler.growth_interval,
                 f16 + "clean steps in a row before the scale doubles")
      ->capture_default_str();
  app.add_option("--hysteresis", flags.scaler.hysteresis,
                 f16 + "overflows before the scale halves (each skips its step)")
      ->capture_default_str();
  app.add_option("--min-loss-scale", flags.scaler.min_scale,
                 f16 + "the scale never halves below this")
      ->capture_default_str();
}

bool loss_scaled(const RunFlags& flags) { return flags.amp && flags.amp_dtype == DType::kF16; }

void validate_loss_scale_flags(const RunFlags& flags) {
  const LossScaleFlags& given = flags.loss_scale;
  COURSE_CHECK(given == LossScaleFlags{} || loss_scaled(flags),
               "--initial-scale-power, --loss-scale-window, --hysteresis and --min-loss-scale "
               "set f16's loss scaler: add --amp --amp-dtype f16");
  COURSE_CHECK(given.initial_scale_power >= -126 && given.initial_scale_power <= 127,
               "--initial-scale-power must be from -126 to 127 (a finite f32 scale), got ",
               given.initial_scale_power);
}

const Tensor& unscale_and_agree(optim::LossScaler& scaler,
                                const std::vector<nn::Parameter*>& params,
                                parallel::Communicator* ranks) {
  scaler.unscale_and_check(params);
  if (ranks) ranks->allreduce(scaler.found_inf_slot(), parallel::ReduceOp::kMax)->wait();
  return scaler.found_inf();
}

std::unique_ptr<optim::LossScaler> make_loss_scaler(const RunFlags& flags) {
  if (!loss_scaled(flags)) return nullptr;
  optim::LossScalerOptions options = flags.loss_scale.scaler;
  options.initial_scale = std::ldexp(1.0f, flags.loss_scale.initial_scale_power);
  return std::make_unique<optim::LossScaler>(options);
}

void print_loss_scaling(const optim::LossScaler* scaler, bool lead) {
  if (!scaler) return;
  const float scale = scaler->scale();
  const auto skipped = static_cast<long long>(scaler->skipped_steps());
  if (lead) std::printf("loss scale %.0f, %lld step(s) skipped\n", scale, skipped);
}

}  // namespace course::train
