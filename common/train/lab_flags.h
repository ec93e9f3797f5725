// The training flags every lab shares, with the course script's names and defaults (except
// the image size and model, which default to the embedded Fashion-MNIST and the small
// network): the run's own (RunFlags: what the training loop reads), and for the image labs
// the data and DataLoader flags of common/data/open_dataset.h too (TrainingFlags). Each lab
// adds its own flags to the same CLI11 app.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/core/invocation.h"
#include "common/data/open_dataset.h"
#include "common/optim/make_optimizer.h"
#include "common/tensor/device.h"
#include "common/train/loss_scaling.h"

// CLI11's app, declared only: its header costs seconds of compile time in every file that
// includes it, so only the files that register or parse flags include <CLI/CLI.hpp>.
namespace CLI {
class App;
}  // namespace CLI

namespace course::train {

struct RunFlags {
  int64_t batch_size = 128;  // per rank
  int64_t epochs = 1;
  float lr = 0.1f;
  float wd = 0.0f;
  float mom = 0.9f;
  float label_smoothing = 0.1f;
  bool test = false;  // run --test-nsteps steps, report speed, skip validation
  int64_t test_nsteps = 50;
  int64_t log_every = 10;             // steps between reads of the loss from the device
  bool wall_clock_breakdown = false;  // each phase's time printed every log_every steps
  bool amp = false;
  DType amp_dtype = DType::kBF16;  // without --amp-dtype: the device's (fastest_amp_dtype)
  LossScaleFlags loss_scale;       // f16's dynamic loss scaler (loss_scaling.h)
  bool channels_last = false;
  bool tf32_conv = true;     // TF32 tensor cores for f32 convolutions (common/kernels/math_mode.h)
  bool tf32_matmul = false;  // and for f32 GEMMs, as PyTorch's defaults
  std::string chkpt;         // checkpoint written after every epoch (and at the end of --test)
  std::string resume;        // continue from this checkpoint
  std::string profile;       // Chrome trace of the profiled steps
  std::string metrics;       // JSON lines appended per epoch
  std::string logdir;        // TensorBoard event files (common/train/event_file.h)
  DeviceRequest device;      // --device, parsed (unset: the GPU if one is visible)
  std::string model = "smallnet";
  bool progress = true;
  // The step's own flags (add_step_flags), for the labs whose step honours them:
  int64_t accumulate = 1;               // micro-batches of batch_size per optimizer step
  std::optional<float> clip_grad_norm;  // the gradients' global L2 norm clipped to it each step
};

// An image lab's flags: its data and its run.
struct TrainingFlags : DataFlags, RunFlags {};

void add_training_flags(CLI::App& app, TrainingFlags& flags);
// The data flags alone, for tools that read images without training (day 4's quantization).
void add_data_flags(CLI::App& app, DataFlags& flags);
// --decode-device cpu|gpu, for the programs that decode on the device (day 3, the loader bench).
void add_decode_device_flag(CLI::App& app, DataFlags& flags);
// The flags of the run alone (no data flags), --model taking one of `models`: for labs that
// read other data than images.
void add_run_flags(CLI::App& app, RunFlags& flags, const std::vector<std::string>& models);

// Gradient accumulation (--accumulate) and clipping (--clip-grad-norm), for the labs whose
// step honours them.
void add_step_flags(CLI::App& app, RunFlags& flags);

// --device, parsed into `request` once (its refusal is CLI11's, naming the flag).
void add_device_flag(CLI::App& app, DeviceRequest& request, const std::string& help);

// A flag with an on and an off form (--pin-memory / --no-pin-memory), as the course's script.
void add_switch(CLI::App& app, const std::string& name, bool& value, const std::string& help);

// A flag that takes one of `names`, handed to `set` once parsed; the help shows `shown_default`.
void add_named_choice(CLI::App& app, const std::string& flag, const std::vector<std::string>& names,
                      const std::string& shown_default, std::function<void(const std::string&)> set,
                      const std::string& help);

// A flag whose names map to a type's values (an enum), parsed into `target` once, so that no
// code after the flags compares the name; the help lists the names and the default's.
template <class T>
void add_choice(CLI::App& app, const std::string& flag, T& target,
                const std::vector<std::pair<std::string, T>>& choices, const std::string& help) {
  std::vector<std::string> names;
  std::string shown_default;
  for (const auto& [name, value] : choices) {
    names.push_back(name);
    if (value == target) shown_default = name;
  }
  add_named_choice(
      app, flag, names, shown_default,
      [&target, choices](const std::string& chosen) {
        for (const auto& [name, value] : choices) {
          if (name == chosen) target = value;
        }
      },
      help);
}

// Parses argv; --help prints the usage and exits 0, a bad flag prints one message and exits
// non-zero (CLI11's behaviour, the same in every lab).
void parse_or_exit(CLI::App& app, int argc, char** argv);

using course::invocation_path;  // a relative path from where `bazel run` started

// Checks what flags alone cannot (value ranges, the model's smallest image); throws Error.
void validate_training_flags(const TrainingFlags& flags);
void validate_run_flags(const RunFlags& flags);  // the run's flags alone

// The run's arithmetic, for its header: "f32", "amp bf16" or "amp f16".
std::string precision_name(const RunFlags& flags);

// The optimizer `kind` with the run's --lr, --mom (SGD's and LARS's momentum) and --wd.
optim::OptimizerFlags optimizer_flags(const RunFlags& flags,
                                      optim::OptimizerKind kind = optim::OptimizerKind::kSgd);

}  // namespace course::train
