// Gradient accumulation for the image labs (--accumulate K): a step's loaded batch run as K
// micro-batches, one forward and backward pass each, their gradients added up before the one
// optimizer step. Each pass back-propagates its share of the batch's mean loss (its images over
// the batch's), so K micro-batches of b give the gradient of one batch of K x b (batch norm
// excepted: its statistics are each micro-batch's), and an epoch's short last batch splits as
// evenly as it goes. Data parallelism reduces after the last pass only (`last`: PyTorch's
// no_sync on the others).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/data/batch.h"
#include "common/nn/module.h"

namespace course::train {

struct MicroBatch {
  Batch batch;       // rows of the step's batch (views, sharing its storage)
  float share = 1;   // its images over the batch's: the weight of its mean loss
  bool last = true;  // the step's last pass: data parallelism reduces after it
};

// `batch` in `parts` micro-batches of consecutive rows, the sizes differing by one at most.
// Throws when the batch holds fewer images than `parts`.
std::vector<MicroBatch> split_into_micro_batches(const Batch& batch, int64_t parts);

// A step's batch for a run's header: "512 (4 micro-batches of 128)", or "128" alone.
std::string describe_step_batch(int64_t micro_batch, int64_t parts);

// Before a run: throws unless every batch of an epoch of `samples` in batches of `batch`
// (the last one short unless `drop_last`) splits into `parts` micro-batches.
void check_micro_batches(int64_t samples, int64_t batch, int64_t parts, bool drop_last);

// One step's passes: the model's gradients zeroed, then `forward_backward` on each micro-batch
// (it back-propagates share x its mean loss into the gradients, and returns that mean loss as a
// (1,) f32 tensor on the device). Returns the batch's mean loss, on the device.
Tensor accumulate_gradients(nn::Module& model, const Batch& batch, int64_t parts,
                            const std::function<Tensor(const MicroBatch&)>& forward_backward);

}  // namespace course::train
