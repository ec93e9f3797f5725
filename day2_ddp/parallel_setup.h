// What the day-2 flags choose for a run on several ranks: the gradient synchronisation
// (--ddp naive: TP2.2 after backward; --ddp buckets: DDP with TP2.3's plan and MPI's or TP2.4's
// ring all-reduce) and the learning rate (one-cycle, or TP2.5's large-batch schedule with
// --base-batch).
#pragma once

#include <functional>
#include <memory>

#include "common/parallel/data_parallel/ddp.h"
#include "day2_ddp/options.h"

namespace day2 {

// Null for --ddp naive, after broadcasting rank 0's weights (the step then calls
// allreduce_gradients itself).
std::unique_ptr<course::parallel::DistributedDataParallel> make_ddp(
    const LabOptions& options, course::nn::Module& model,
    const std::shared_ptr<course::parallel::Communicator>& comm);

std::function<float(int64_t)> learning_rate(const LabOptions& options, int64_t steps_per_epoch,
                                            int64_t global_batch);

}  // namespace day2
