// Day 4's image models on the shared training loop: `--model vit-...` or `coatnet-...` trains
// the Vision Transformer or CoAtNet (common/nn) on the embedded Fashion-MNIST, under the data
// parallelism the flags choose (one process, DDP, ZeRO 1-3, FSDP's strategies:
// common/parallel/data_parallel/data_parallel_model.h), sharded one unit per block, with AdamW,
// warm-up and cosine decay as the GPT's run.
#pragma once

#include <optional>

#include "common/train/chronometer.h"
#include "day4_large_models/gpt_options.h"

namespace day4 {

struct ImageLabResult {
  int64_t steps = 0;
  float last_loss = 0;
  std::optional<double> test_accuracy;  // after the last epoch (not with --test)
  course::train::ChronometerReport timing;
};

ImageLabResult run_image_lab(GptLabOptions options);

}  // namespace day4
