// The day-1 exercises (TP1.1-TP1.5): what the trainee writes in day1_gpu/exercises.cc.
// The complete versions are in solutions/day1_gpu/exercises.cc; the lab program calls these
// functions, and //day1_gpu:check tests them.
#pragma once

#include <cstdint>
#include <vector>

#include "common/data/batch.h"
#include "common/nn/module.h"
#include "common/optim/loss_scaler.h"
#include "common/optim/optimizer.h"

namespace day1 {

using course::Batch;
using course::Device;
using course::Stream;
using course::Tensor;
namespace nn = course::nn;
namespace optim = course::optim;

// TP1.1: the batch (images and labels) copied to the training device, queued on `stream` (of
// that device): asynchronous from the loader's pinned memory, so the copy of the next batch
// overlaps the current step (--non-blocking). The result is a copy in the device's memory,
// also when `device` is the CPU: the loader's buffer is not the step's.
Batch to_device(const Batch& batch, Device device, const Stream& stream);

// TP1.2: one mixed-precision optimizer step after a backward pass of (loss * scale): unscale
// the gradients, step unless any is not finite, update the scaler. The decision stays on the
// device (the scaler's found-inf flag, which the optimizer's step takes): the host never waits.
void scaled_optimizer_step(optim::LossScaler& scaler, optim::Optimizer& optimizer,
                           const std::vector<nn::Parameter*>& params);

// TP1.3: the input images in channels-last (NHWC) memory format.
Tensor to_channels_last(const Tensor& images);

// TP1.4: the profiler's schedule, as torch.profiler.schedule(wait, warmup, active): skip
// `wait` steps, run `warmup` steps unrecorded, then record `active` steps, once.
struct ProfileSchedule {
  int64_t wait = 1, warmup = 1, active = 12;
};
bool record_step(int64_t step, const ProfileSchedule& schedule);

// TP1.5 ("GPU under the hood"): the bytes the model itself holds during training: parameters,
// their gradients and the optimizer's state tensors (activations come on top, per batch).
// The lab prints it with --model-memory.
int64_t model_memory_bytes(const std::vector<nn::Parameter*>& params, optim::Optimizer& optimizer);

}  // namespace day1
