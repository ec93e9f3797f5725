// Command line of the day-1 lab.
#include "day1_gpu/options.h"

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "common/nn/models.h"

namespace day1 {

LabOptions parse_options(int argc, char** argv) {
  LabOptions o;
  CLI::App app(
      "Day 1: train a network on the CPU or the GPU, with mixed precision, "
      "channels-last and a profiler");
  app.add_option("-b,--batch-size", o.batch_size, "images per step")->capture_default_str();
  app.add_option("--image-size", o.image_size, "side of the (square) input images")
      ->capture_default_str();
  app.add_option("-e,--epochs", o.epochs, "passes over the training set")->capture_default_str();
  app.add_option("--lr", o.lr, "peak learning rate of the one-cycle schedule")
      ->capture_default_str();
  app.add_option("--wd", o.wd, "weight decay")->capture_default_str();
  app.add_option("--mom", o.mom, "SGD momentum")->capture_default_str();
  app.add_option("--label-smoothing", o.label_smoothing)->capture_default_str();
  app.add_flag("--test", o.test, "run --test-nsteps steps only and report the speed");
  app.add_option("--test-nsteps", o.test_nsteps)->capture_default_str();
  app.add_flag("--amp", o.amp, "mixed precision (TP1.2)");
  std::string amp_dtype = "bf16";
  app.add_option("--amp-dtype", amp_dtype, "f16 (with loss scaling) or bf16")
      ->check(CLI::IsMember({"f16", "bf16"}))
      ->capture_default_str();
  app.add_flag("--channels-last", o.channels_last, "NHWC activations (TP1.3)");
  app.add_option("--chkpt", o.chkpt, "checkpoint file written after every epoch");
  app.add_option("--resume", o.resume, "checkpoint to continue from");
  app.add_option("--profile", o.profile, "Chrome-trace file of the profiled steps (TP1.4)");
  app.add_option("--metrics", o.metrics, "JSON-lines file of per-epoch metrics");
  app.add_option("--device", o.device, "cpu, cuda or cuda:N (default: the GPU if visible)");
  app.add_option("--data-dir", o.data_dir, "folder of the Fashion-MNIST IDX files")
      ->capture_default_str();
  app.add_option("--synthetic", o.synthetic, "train on this many random images instead");
  app.add_option("--model", o.model, "network")
      ->check(CLI::IsMember(course::nn::model_names()))
      ->capture_default_str();
  app.add_option("--max-memory-mb", o.max_memory_mb, "cap the device memory (0: no cap)");
  app.add_option("--seed", o.seed, "seed of weights and shuffling")->capture_default_str();
  app.add_flag("--model-memory", o.model_memory,
               "print the memory of parameters, gradients and optimizer state (TP1.5)");
  bool no_progress = false;
  app.add_flag("--no-progress", no_progress, "no progress bar");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  o.amp_dtype = course::parse_dtype(amp_dtype);
  o.progress = !no_progress;
  return o;
}

void validate(const LabOptions& o) {
  COURSE_CHECK(o.batch_size > 0, "--batch-size must be positive, got ", o.batch_size);
  COURSE_CHECK(o.epochs > 0, "--epochs must be positive, got ", o.epochs);
  COURSE_CHECK(o.test_nsteps > 0, "--test-nsteps must be positive, got ", o.test_nsteps);
  COURSE_CHECK(o.lr > 0, "--lr must be positive, got ", o.lr);
  COURSE_CHECK(o.wd >= 0 && o.mom >= 0, "--wd and --mom must not be negative");
  COURSE_CHECK(o.label_smoothing >= 0 && o.label_smoothing < 1,
               "--label-smoothing must be in [0, 1), got ", o.label_smoothing);
  COURSE_CHECK(o.max_memory_mb >= 0 && o.synthetic >= 0,
               "--max-memory-mb and --synthetic must not be negative");
  const int64_t smallest = course::nn::min_image_size(o.model);
  COURSE_CHECK(o.image_size >= smallest, "--image-size ", o.image_size, " is too small for ",
               o.model, " (at least ", smallest, ")");
}

}  // namespace day1
