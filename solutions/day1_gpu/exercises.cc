// Day 1 exercises TP1.1-TP1.5 (the lab sheet is day1_gpu/README.md).
// solutions/day1_gpu/exercises.cc is the complete version; day1_gpu/exercises.cc is generated
// from it by tools/labgen with every exercise replaced by a stub: trainees edit that one.
#include "day1_gpu/exercises.h"

#include "common/core/exercise.h"
#include "common/kernels/layout.h"

namespace day1 {

Batch to_device(const Batch& batch, Device device, const Stream& stream) {
  // BEGIN EXERCISE TP1.1: copy the batch's images and labels to the device, on `stream`
  return {batch.images.to(device, stream), batch.labels.to(device, stream)};
  // END EXERCISE
}

void scaled_optimizer_step(optim::LossScaler& scaler, optim::Optimizer& optimizer,
                           const std::vector<nn::Parameter*>& params) {
  // BEGIN EXERCISE TP1.2: unscale the gradients, step unless they overflowed, update the scale
  scaler.unscale_and_check(params);
  optimizer.step(scaler.found_inf());
  scaler.update();
  // END EXERCISE
}

Tensor to_channels_last(const Tensor& images) {
  // BEGIN EXERCISE TP1.3: convert the (N, C, H, W) images to the channels-last memory format
  return course::to_memory_format(images, course::MemoryFormat::kChannelsLast);
  // END EXERCISE
}

bool record_step(int64_t step, const ProfileSchedule& schedule) {
  // BEGIN EXERCISE TP1.4: record only the `active` steps that follow `wait` + `warmup` steps
  const int64_t first = schedule.wait + schedule.warmup;
  return step >= first && step < first + schedule.active;
  // END EXERCISE
}

int64_t model_memory_bytes(const std::vector<nn::Parameter*>& params, optim::Optimizer& optimizer) {
  // BEGIN EXERCISE TP1.5: add up the bytes of parameters, gradients and optimizer state
  int64_t bytes = 0;
  for (const nn::Parameter* p : params) bytes += p->value.nbytes() + p->grad.nbytes();
  for (const auto& [name, state] : optimizer.state_tensors()) bytes += state->nbytes();
  return bytes;
  // END EXERCISE
}

}  // namespace day1
