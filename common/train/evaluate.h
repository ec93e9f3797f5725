// The end-of-epoch validation every lab runs: the classifier's accuracy and loss over this
// rank's share of the validation set (samples r, r + n, r + 2n, ... of n ranks), in batches of
// the course's 250, in the lab's precision. The training loop sums the shares over the ranks.
#pragma once

#include <functional>
#include <memory>

#include "common/data/batch.h"
#include "common/data/dataset.h"
#include "common/data/transforms.h"
#include "common/nn/module.h"
#include "common/train/lab_flags.h"
#include "common/train/training_state.h"

namespace course::train {

inline constexpr int64_t kValidationBatch = 250;

// `place` puts a host batch where and how the model takes it (device, memory format).
EvalTally evaluate(nn::Module& model, const std::shared_ptr<const Dataset>& data,
                   const TransformOptions& transform, const TrainingFlags& flags, int rank,
                   int world_size, const std::function<Batch(const Batch&)>& place);

}  // namespace course::train
