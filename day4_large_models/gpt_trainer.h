// The GPT lab's run on the shared training loop: byte-level text windows, a GPT (optionally
// with checkpointed blocks), AdamW with warm-up and cosine decay, validation loss against the
// unigram entropy, and a generated sample.
#pragma once

#include <optional>
#include <string>

#include "common/train/training_loop.h"
#include "day4_large_models/gpt_options.h"

namespace day4 {

struct GptLabResult {
  int64_t steps = 0;
  float last_loss = 0;
  std::optional<double> val_loss;  // nats per token (not with --test)
  double unigram_entropy = 0;      // of the validation tokens, nats
  std::string sample;
  course::train::ChronometerReport timing;
};

GptLabResult run_gpt_lab(GptLabOptions options);

}  // namespace day4
