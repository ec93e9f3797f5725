// `bazel run //day4_large_models:lab -- [flags]`: trains a GPT on the embedded text (see
// day4_large_models/README.md).
#include "common/train/lab_main.h"
#include "day4_large_models/gpt_trainer.h"

int main(int argc, char** argv) {
  const day4::GptLabOptions options = day4::parse_gpt_options(argc, argv);
  return course::train::lab_main([&] { day4::run_gpt_lab(options); });
}
