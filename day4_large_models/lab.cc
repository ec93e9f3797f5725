// `bazel run //day4_large_models:lab -- [flags]`: trains a GPT on the embedded text, or an image
// model (--model vit-..., coatnet-...) on the embedded images (see day4_large_models/README.md).
#include "common/train/lab_main.h"
#include "day4_large_models/gpt_trainer.h"
#include "day4_large_models/image_trainer.h"

int main(int argc, char** argv) {
  return course::train::lab_main([&] {
    const day4::GptLabOptions options = day4::parse_gpt_options(argc, argv);
    if (options.model.images()) {
      day4::run_image_lab(options);
    } else {
      day4::run_gpt_lab(options);
    }
  });
}
