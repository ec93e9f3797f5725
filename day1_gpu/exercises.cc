// Day 1 exercises TP1.1-TP1.5 (the lab sheet is day1_gpu/README.md).
// solutions/day1_gpu/exercises.cc is the complete version; day1_gpu/exercises.cc is generated
// from it by tools/labgen with every exercise replaced by a stub: trainees edit that one.
#include "day1_gpu/exercises.h"

#include "common/core/exercise.h"
#include "common/kernels/layout.h"

namespace day1 {

Batch to_device(const Batch& batch, Device device, const Stream& stream) {
  // BEGIN EXERCISE TP1.1: copy the batch's images and labels to the device, on `stream`
  ::course::exercise_todo("TP1.1", "copy the batch's images and labels to the device, on `stream`",
                          "day1_gpu/README.md#tp11");
  // END EXERCISE
}

void scaled_optimizer_step(optim::LossScaler& scaler, optim::Optimizer& optimizer,
                           const std::vector<nn::Parameter*>& params) {
  // BEGIN EXERCISE TP1.2: unscale the gradients, step unless they overflowed, update the scale
  ::course::exercise_todo("TP1.2",
                          "unscale the gradients, step unless they overflowed, update the scale",
                          "day1_gpu/README.md#tp12");
  // END EXERCISE
}

Tensor to_channels_last(const Tensor& images) {
  // BEGIN EXERCISE TP1.3: convert the (N, C, H, W) images to the channels-last memory format
  ::course::exercise_todo("TP1.3",
                          "convert the (N, C, H, W) images to the channels-last memory format",
                          "day1_gpu/README.md#tp13");
  // END EXERCISE
}

bool record_step(int64_t step, const ProfileSchedule& schedule) {
  // BEGIN EXERCISE TP1.4: record only the `active` steps that follow `wait` + `warmup` steps
  ::course::exercise_todo("TP1.4",
                          "record only the `active` steps that follow `wait` + `warmup` steps",
                          "day1_gpu/README.md#tp14");
  // END EXERCISE
}

int64_t model_memory_bytes(const std::vector<nn::Parameter*>& params, optim::Optimizer& optimizer) {
  // BEGIN EXERCISE TP1.5: add up the bytes of parameters, gradients and optimizer state
  ::course::exercise_todo("TP1.5", "add up the bytes of parameters, gradients and optimizer state",
                          "day1_gpu/README.md#tp15");
  // END EXERCISE
}

}  // namespace day1
