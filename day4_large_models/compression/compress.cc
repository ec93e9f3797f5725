// `bazel run //day4_large_models:compress -- <mode> [flags]`: day 4's Part 7, making a trained
// model cheaper to run. `distill` trains a small student from a trained teacher
// (day4_large_models/compression/distill_trainer.h); `quantize` runs a trained network in int8
// (day4_large_models/compression/quantize_run.h); `prune` prunes and fine-tunes it
// (day4_large_models/compression/prune_run.h). Built with the trainee's exercises
// (//day4_large_models:compress) and with the solutions (//solutions/day4_large_models:compress).
#include <CLI/CLI.hpp>

#include "common/train/lab_main.h"
#include "day4_large_models/compression/distill_trainer.h"
#include "day4_large_models/compression/prune_run.h"
#include "day4_large_models/compression/quantize_run.h"

int main(int argc, char** argv) {
  CLI::App app("Day 4, Part 7: making a trained model cheaper to run");
  app.require_subcommand(1);
  day4::DistillOptions distill;
  day4::add_distill_flags(
      *app.add_subcommand("distill",
                          "train a small student (--model, default tinynet) from a trained "
                          "teacher's softened outputs and the labels (TP4.19)"),
      distill);
  day4::QuantizeOptions quantize;
  CLI::App* quantize_command = app.add_subcommand(
      "quantize",
      "post-training int8 quantization of a trained network: calibrated input scales, "
      "per-channel weights (TP4.20), accuracy and speed against f32");
  day4::add_quantize_flags(*quantize_command, quantize);
  day4::PruneOptions prune;
  CLI::App* prune_command = app.add_subcommand(
      "prune",
      "prune a trained network (global magnitude, and 2:4 with TP4.21), fine-tune it with its "
      "masks kept, and tabulate accuracy against sparsity");
  day4::add_prune_flags(*prune_command, prune);
  course::train::parse_or_exit(app, argc, argv);
  return course::train::lab_main([&] {
    if (quantize_command->parsed()) {
      day4::run_quantization(quantize);
    } else if (prune_command->parsed()) {
      day4::run_pruning(prune);
    } else {
      day4::run_distillation(distill);
    }
  });
}
