// Shared training flags.
#include "common/train/lab_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "common/core/error.h"
#include "common/core/launch_rank.h"
#include "common/models/model_registry.h"
#include "common/models/models.h"

namespace course::train {

void add_switch(CLI::App& app, const std::string& name, bool& value, const std::string& help) {
  app.add_flag("--" + name + ",!--no-" + name, value, help)->default_str(value ? "on" : "off");
}

void add_device_flag(CLI::App& app, DeviceRequest& request, const std::string& help) {
  app.add_option_function<std::string>(
         "--device", [&request](const std::string& text) { request = parse_device_request(text); },
         help)
      ->check(CLI::Validator(
          [](const std::string& text) {
            try {
              parse_device_request(text);
              return std::string();
            } catch (const Error& error) {
              return std::string(error.what());
            }
          },
          "DEVICE"));
}

void add_named_choice(CLI::App& app, const std::string& flag, const std::vector<std::string>& names,
                      const std::string& shown_default, std::function<void(const std::string&)> set,
                      const std::string& help) {
  app.add_option_function<std::string>(flag, std::move(set), help)
      ->check(CLI::IsMember(names))
      ->default_str(shown_default);
}

void add_data_flags(CLI::App& app, DataFlags& f) {
  app.add_option("--data-dir", f.data_dir,
                 "dataset folder: Fashion-MNIST, CIFAR-10's binary batches, train.pack + "
                 "val.pack, or train/ + val/ (class folders or .tar shards)")
      ->capture_default_str();
  app.add_option("--synthetic", f.synthetic, "train on this many random images instead");
  app.add_option("--train-subset", f.train_subset,
                 "train on the first N training images only (in-memory data: quick runs, "
                 "hyper-parameter trials)");
  app.add_option("--test-subset", f.test_subset,
                 "test on the first N test images only (in-memory data: quick runs, "
                 "hyper-parameter trials)");
  app.add_option("--format", f.format, "the --data-dir's storage format (auto: detected)")
      ->check(CLI::IsMember({"auto", "idx", "cifar10", "folder", "tar", "packed"}));
  app.add_option("--image-size", f.image_size, "side of the (square) input images")
      ->capture_default_str();
  app.add_flag("--augment", f.augment, "RandomResizedCrop and flip on in-memory images");
  app.add_option("--seed", f.seed, "seed of weights, shuffling and augmentation")
      ->capture_default_str();
  app.add_option("--num-workers", f.num_workers,
                 "DataLoader worker threads (default -1: the course's 8, fitted to the rank: at "
                 "most its compute threads less one, at least 1)")
      ->capture_default_str();
  app.add_option("--prefetch-factor", f.prefetch_factor, "batches in flight per worker")
      ->capture_default_str();
  add_switch(app, "persistent-workers", f.persistent_workers, "keep workers across epochs");
  add_switch(app, "pin-memory", f.pin_memory, "page-locked batches");
  add_switch(app, "non-blocking", f.non_blocking,
             "copy the next batch to the GPU on a copy stream during the current step (on the "
             "CPU there is no copy to overlap)");
  app.add_flag("--drop-last", f.drop_last, "drop the last incomplete batch");
  app.add_flag("--skip-corrupt", f.skip_corrupt, "report and skip unreadable images");
}

void add_decode_device_flag(CLI::App& app, DataFlags& f) {
  app.add_option_function<std::string>(
         "--decode-device",
         [&f](const std::string& where) {
           f.decode_device = where == "gpu" ? DecodeDevice::kGpu : DecodeDevice::kCpu;
         },
         "where JPEGs are decoded, cropped and normalised: cpu (the loader's workers, OpenCV) "
         "or gpu (the training device: nvJPEG on a GPU, OpenCV into the simulated sim:N's "
         "memory)")
      ->check(CLI::IsMember({"cpu", "gpu"}))
      ->default_str("cpu");
}

namespace {

// --amp and its type: the one --amp-dtype names, or the device's fastest (bf16, f16 with the
// loss scaler before sm_80), chosen once the flags are parsed; f16's scaler flags.
void add_precision_flags(CLI::App& app, RunFlags& f) {
  app.add_flag("--amp", f.amp, "mixed precision");
  auto* dtype =
      app.add_option_function<std::string>(
             "--amp-dtype", [&f](const std::string& name) { f.amp_dtype = parse_dtype(name); },
             "f16 (with loss scaling) or bf16")
          ->check(CLI::IsMember({"f16", "bf16"}))
          ->default_str("bf16 where the GPU has bf16 tensor cores, f16 before sm_80");
  add_loss_scale_flags(app, f.loss_scale);
  app.final_callback([&f, dtype] {
    if (!f.amp || dtype->count() > 0) return;
    const Device device = named_or_default_device(f.device);
    // A GPU that is not there is refused where the run sets its device up, with its message.
    if (device.is_cuda() && device.index >= cuda_device_count()) return;
    f.amp_dtype = fastest_amp_dtype(device);
  });
}

}  // namespace

void add_training_flags(CLI::App& app, TrainingFlags& f) {
  add_data_flags(app, f);
  add_run_flags(app, f, nn::image_model_names());
}

void add_run_flags(CLI::App& app, RunFlags& f, const std::vector<std::string>& models) {
  app.add_option("-b,--batch-size", f.batch_size,
                 "samples (images, or token windows) per step, per rank")
      ->capture_default_str();
  app.add_option("-e,--epochs", f.epochs, "passes over the training set")->capture_default_str();
  app.add_option("--lr", f.lr, "peak learning rate")->capture_default_str();
  app.add_option("--wd", f.wd, "weight decay")->capture_default_str();
  app.add_option("--mom", f.mom, "momentum")->capture_default_str();
  app.add_option("--label-smoothing", f.label_smoothing)->capture_default_str();
  app.add_flag("--test", f.test,
               "run --test-nsteps steps only (within --epochs epochs), without validation, and "
               "report the speed");
  app.add_option("--test-nsteps", f.test_nsteps)->capture_default_str();
  app.add_option("--log-every", f.log_every,
                 "steps between reads of the training loss from the device (the progress line, "
                 "TensorBoard, the divergence check): the GPU is never waited for in between")
      ->capture_default_str();
  app.add_flag("--wall-clock-breakdown", f.wall_clock_breakdown,
               "every --log-every steps, each phase's mean time over the steps since the last "
               "such line (DeepSpeed's wall_clock_breakdown; read when the loss is)");
  add_precision_flags(app, f);
  app.add_flag("--channels-last", f.channels_last, "NHWC activations");
  add_switch(app, "tf32-conv", f.tf32_conv,
             "f32 convolutions on the GPU may use TF32 tensor cores "
             "(torch.backends.cudnn.allow_tf32)");
  add_switch(app, "tf32-matmul", f.tf32_matmul,
             "f32 matrix products on the GPU may use TF32 tensor cores "
             "(torch.backends.cuda.matmul.allow_tf32)");
  app.add_option("--chkpt", f.chkpt, "checkpoint file written after every epoch");
  app.add_option("--resume", f.resume, "checkpoint to continue from");
  app.add_option("--profile", f.profile, "Chrome-trace file of the profiled steps");
  app.add_option("--metrics", f.metrics, "JSON-lines file of per-epoch metrics");
  app.add_option("--logdir", f.logdir,
                 "folder of TensorBoard event files: loss and learning rate per step, test "
                 "loss and accuracy per epoch, the run's settings as text");
  add_device_flag(app, f.device,
                  "cpu, cuda, cuda:N, or sim (the simulated accelerator of CI: a GPU's copies and "
                  "waits in host memory) (default: the GPU if visible)");
  app.add_option("--model", f.model, "network")
      ->check(CLI::IsMember(models))
      ->capture_default_str();
  app.add_flag_callback(
      "--no-progress", [&f] { f.progress = false; }, "no progress bar");
}

void add_step_flags(CLI::App& app, RunFlags& f) {
  app.add_option("--accumulate", f.accumulate,
                 "micro-batches of --batch-size per optimizer step (gradient accumulation; data "
                 "parallelism reduces after the last only)")
      ->capture_default_str();
  app.add_option("--clip-grad-norm", f.clip_grad_norm,
                 "clip the gradients to this global L2 norm before each optimizer step (after "
                 "unscaling, skipped on an overflowed step), every element counted once over "
                 "the ranks' replicas, shards, slices and stages");
}

void parse_or_exit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank of a launched job parses the same flags: rank 0 prints the help or the refusal.
    if (prints_shared_messages()) std::exit(app.exit(e));
    std::ostringstream discarded;
    const int code = app.exit(e, discarded, discarded);
    if (code != 0) yield_the_message_to_rank_zero();
    std::exit(code);
  }
}

void validate_training_flags(const TrainingFlags& f) {
  validate_run_flags(f);
  COURSE_CHECK(f.synthetic >= 0, "--synthetic must not be negative");
  COURSE_CHECK(f.num_workers >= 0 || f.num_workers == kFittedWorkers,
               "--num-workers must be 0 or more (or -1, the default: fitted to the rank), got ",
               f.num_workers);
  COURSE_CHECK(f.prefetch_factor > 0, "--prefetch-factor must be positive");
  const int64_t smallest = nn::min_image_size(f.model);
  COURSE_CHECK(f.image_size >= smallest, "--image-size ", f.image_size, " is too small for ",
               f.model, " (at least ", smallest, ")");
}

void validate_run_flags(const RunFlags& f) {
  COURSE_CHECK(f.batch_size > 0, "--batch-size must be positive, got ", f.batch_size);
  COURSE_CHECK(f.epochs > 0, "--epochs must be positive, got ", f.epochs);
  COURSE_CHECK(f.test_nsteps > 0, "--test-nsteps must be positive, got ", f.test_nsteps);
  COURSE_CHECK(f.log_every > 0, "--log-every must be positive, got ", f.log_every);
  COURSE_CHECK(f.lr > 0, "--lr must be positive, got ", f.lr);
  COURSE_CHECK(f.wd >= 0 && f.mom >= 0, "--wd and --mom must not be negative");
  COURSE_CHECK(f.label_smoothing >= 0 && f.label_smoothing < 1,
               "--label-smoothing must be in [0, 1), got ", f.label_smoothing);
  COURSE_CHECK(f.accumulate >= 1, "--accumulate must be at least 1, got ", f.accumulate);
  COURSE_CHECK(!f.clip_grad_norm || *f.clip_grad_norm > 0,
               "--clip-grad-norm must be positive (leave it out for no clipping), got ",
               f.clip_grad_norm.value_or(0));
  validate_loss_scale_flags(f);
}

std::string precision_name(const RunFlags& f) {
  return f.amp ? "amp " + std::string(dtype_name(f.amp_dtype)) : "f32";
}

optim::OptimizerFlags optimizer_flags(const RunFlags& f, optim::OptimizerKind kind) {
  return {.kind = kind, .lr = f.lr, .momentum = f.mom, .weight_decay = f.wd};
}

}  // namespace course::train
