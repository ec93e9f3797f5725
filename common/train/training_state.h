// What a checkpoint of a training run holds, by name: the model's parameters and buffers
// ("model.<name>") and the optimizer's state tensors ("optimizer.<name>"); and the tallies of
// a classifier's evaluation (correct predictions, summed loss).
#pragma once

#include "common/nn/module.h"
#include "common/optim/optimizer.h"
#include "common/train/checkpoint.h"

namespace course::train {

NamedTensors training_state(nn::Module& model, optim::Optimizer& optimizer);
// The model's part alone: what loading a trained model from a run's checkpoint reads.
NamedTensors model_state(nn::Module& model);
// A sharded run's per-rank state: its shards' values ("model.<unit>.shard") and its
// optimizer's state.
NamedTensors sharded_training_state(
    const std::vector<std::pair<std::string, nn::Parameter*>>& shards, optim::Optimizer& optimizer);

struct EvalTally {
  int64_t correct = 0;
  double loss_sum = 0;
  int64_t samples = 0;
  double accuracy() const { return samples ? static_cast<double>(correct) / samples : 0; }
  double loss() const { return samples ? loss_sum / samples : 0; }
};

// Rows of the (N, C) logits whose first largest value is at the label.
int64_t count_correct(const Tensor& logits, const Tensor& labels);

// Adds a batch's (N, C) logits against its labels: the correct rows and the unsmoothed
// cross-entropy.
void tally(const Tensor& logits, const Tensor& labels, EvalTally& tally);

}  // namespace course::train
