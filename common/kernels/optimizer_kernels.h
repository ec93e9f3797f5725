// Fused optimizer updates (bodies in optimizer_ops.h): every parameter of a list updated in one
// launch. All tensors f32, each slot of a parameter of that parameter's shape, one device.
//
// The scalars that change from step to step (learning rate, first-step flag, bias corrections)
// are read from a small device tensor, not passed by value, and the table of pointers is kept
// between steps: a captured update (common/tensor/graph.h) then follows the schedule on every
// replay, as PyTorch's capturable optimizers do. `skip_if`, when defined, is a (1,) f32 flag on
// the device: non-zero skips the whole update (an overflowed mixed-precision step), with no host
// wait, as PyTorch's fused optimizers take found_inf.
#pragma once

#include <vector>

#include "common/tensor/tensor.h"

namespace course {

// One parameter's tensors, in the order of the update's slots.
using UpdateSlots = std::vector<Tensor*>;

// The chunks of a sums_of_squares_ launch on the device, rebuilt only when a tensor changes.
struct SquaresTable {
  std::vector<int64_t> key;        // each tensor's address, length and target
  Tensor chunks, firsts, targets;  // i64: (address, length) per chunk; chunks per tensor; targets
  Tensor partial;                  // f32 per chunk
};
// The device-side pointer table and offsets of a multi-tensor update, rebuilt (a host-to-device
// copy) only when a pointer changes.
struct UpdateTable {
  std::vector<int64_t> pointers;
  Tensor table, offsets;
  int64_t elements = 0;  // of all the parameters together
  // Kept with it for an update of several launches: LARS's and LAMB's norms, LAMB's step.
  SquaresTable squares;
  std::vector<UpdateTable> further;
};

struct SgdHyper {
  float momentum, weight_decay;
  bool nesterov;
};
// The step scalars of SGD: {lr, 1 on the first step (the momentum buffer starts as the
// gradient) else 0}.
std::vector<float> sgd_step_scalars(float lr, bool first_step);
// Slots: parameter, gradient, momentum buffer.
void sgd_update_(UpdateTable& table, const std::vector<UpdateSlots>& params, const SgdHyper& hyper,
                 const Tensor& step_scalars, const Tensor& skip_if = Tensor());

struct AdamWHyper {
  float beta1, beta2, eps, weight_decay;
};
// The step scalars of AdamW at step t >= 1: {lr, 1 - beta1^t, 1 - beta2^t}.
std::vector<float> adamw_step_scalars(float lr, const AdamWHyper& hyper, int64_t step);
// Slots: parameter, gradient, first moment, second moment.
void adamw_update_(UpdateTable& table, const std::vector<UpdateSlots>& params,
                   const AdamWHyper& hyper, const Tensor& step_scalars,
                   const Tensor& skip_if = Tensor());

// Every tensor of the list zeroed in one launch (slots: the tensor; f32, one device).
void zero_tensors_(UpdateTable& table, const std::vector<UpdateSlots>& tensors);

// 1-bit Adam's and LAMB's compressed stage (common/parallel/data_parallel/onebit_optimizer.h).
// Slots of momentum_update_: momentum, gradient (m = beta1 m + (1 - beta1) g). Slots of
// frozen_variance_update_: parameter, first moment, second moment, with AdamW's step scalars
// (the second bias correction that of the step the variance froze).
void momentum_update_(UpdateTable& table, const std::vector<UpdateSlots>& params, float beta1,
                      const Tensor& skip_if = Tensor());
void frozen_variance_update_(UpdateTable& table, const std::vector<UpdateSlots>& params,
                             const AdamWHyper& hyper, const Tensor& step_scalars,
                             const Tensor& skip_if = Tensor());

struct LionHyper {
  float beta1, beta2, weight_decay;
};
// Slots: parameter, gradient, momentum. Step scalars: {lr}.
void lion_update_(UpdateTable& table, const std::vector<UpdateSlots>& params,
                  const LionHyper& hyper, const Tensor& step_scalars,
                  const Tensor& skip_if = Tensor());

// LARS (optimizer_ops.h). Slots: parameter, gradient, momentum buffer, the parameter's trust
// ratio (a (1,) f32). Step scalars as SGD's.
void lars_update_(UpdateTable& table, const std::vector<UpdateSlots>& params, float momentum,
                  float weight_decay, const Tensor& step_scalars);
// LAMB's moments and negated direction. Slots: parameter, gradient, first moment, second moment,
// direction. Step scalars: {1 - beta1^t, 1 - beta2^t}.
void lamb_direction_(UpdateTable& table, const std::vector<UpdateSlots>& params,
                     const AdamWHyper& hyper, const Tensor& step_scalars);
// w += lr trust r. Slots: parameter, negated direction, trust ratio (a (1,) f32). Step scalars:
// {lr}.
void trust_step_(UpdateTable& table, const std::vector<UpdateSlots>& params,
                 const Tensor& step_scalars);

// The 1-bit optimizers' exp_avg_mask: x *= mask, elementwise (slots: x, mask); the mask made as 1
// where a variance is non-zero, else 0 (slots: mask, variance).
void multiply_(UpdateTable& table, const std::vector<UpdateSlots>& pairs);
void nonzero_mask_(UpdateTable& table, const std::vector<UpdateSlots>& pairs);
// 1-bit LAMB (onebit_ops.h). Slots of scaled_momentum_update_: momentum, gradient, scaling (a
// (1,) f32). Slots of onebit_lamb_direction_: parameter, momentum, last step's momentum, frozen
// variance, fresh variance, negated update, update without decay, denominator ratio, scaling.
void scaled_momentum_update_(UpdateTable& table, const std::vector<UpdateSlots>& params,
                             float beta1);
void onebit_lamb_direction_(UpdateTable& table, const std::vector<UpdateSlots>& params,
                            const AdamWHyper& hyper);

// sums[targets[t]] = the sum of the squares of *tensors[t] (f32, contiguous, one device; written,
// not added), every tensor in the same two launches (optimizer_ops.h: ChunkReduction,
// CombineChunks); maxima_ the same with each tensor's largest element (-inf for an empty one).
void sums_of_squares_(SquaresTable& table, const std::vector<const Tensor*>& tensors,
                      const std::vector<int64_t>& targets, Tensor& sums);
void maxima_(SquaresTable& table, const std::vector<const Tensor*>& tensors,
             const std::vector<int64_t>& targets, Tensor& maxima);

}  // namespace course
