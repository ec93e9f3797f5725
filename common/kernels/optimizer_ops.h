// Parameter updates of the optimizers, shared by the CPU and the GPU, applied to many tensors
// in one launch ("multi-tensor" or fused updates, as PyTorch's foreach/fused optimizers).
// Index s covers `span` elements of the concatenation of all parameters: it finds the tensor of
// its first element by binary search over the offsets, then updates through a table of K
// pointers per tensor, crossing into the next tensors as needed. The GPU runs a span of one
// element per thread; the CPU a few thousand, a loop that vectorises. Parameters, gradients and
// optimizer state are f32 (the master weights of mixed precision). A non-null `skip` that holds
// a non-zero value (the loss scaler's found-inf flag) makes the whole update a no-op, decided on
// the device. An update may end its slots with per-tensor scalars (kScalarSlots of them: a
// (1,) tensor per parameter read at [0], LARS's and LAMB's trust ratios), so each tensor's
// factor reaches its elements without a launch per tensor.
//
// The squares of many tensors are summed, or their maxima taken, in two launches
// (ChunkReduction, CombineChunks): each tensor cut into chunks from its own start, each chunk a
// row of the row kernels (row_lanes.h), then each tensor's chunks combined in order. A tensor's sum
// therefore depends on neither the device's threads nor the other tensors of the launch (LARS's
// norms are the same updated alone or with the others).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/row_lanes.h"

namespace course::ops {

template <int K, class Update>
struct MultiTensorApply {
  float* const* table;     // count x K pointers
  const int64_t* offsets;  // count + 1 running element counts
  int64_t count;
  int64_t span;  // elements per index
  Update update;
  const float* skip;  // null: never
  COURSE_HD void operator()(int64_t s) const {
    if (skip != nullptr && skip[0] != 0.0f) return;
    const int64_t begin = s * span, total = offsets[count];
    const int64_t end = begin + span < total ? begin + span : total;
    // Locals the stores cannot alias: the compiler keeps them in registers.
    const Update u = update;
    const typename Update::Step step = u.step();
    for (int64_t tensor = tensor_holding(begin), i = begin; i < end; ++tensor) {
      const int64_t first = offsets[tensor];
      const int64_t stop = offsets[tensor + 1] < end ? offsets[tensor + 1] : end;
      float* slot[K];
      for (int k = 0; k < K; ++k) slot[k] = table[tensor * K + k];
      for (int64_t j = i - first; j < stop - first; ++j) u(step, slot, j);
      i = stop;
    }
  }
  COURSE_HD int64_t tensor_holding(int64_t i) const {
    int64_t lo = 0, hi = count;
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (offsets[mid] <= i) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return lo;
  }
};

// SGD with momentum and L2 weight decay, as PyTorch defines it: g = grad + wd * p;
// buf = g on the first step, else mom * buf + g; step along buf (or g + mom * buf, Nesterov).
// Slots: parameter, gradient, momentum buffer. Step scalars: lr, first step (1 or 0).
struct SgdUpdate {
  static constexpr int kSlots = 3;
  static constexpr int kStepScalars = 2;
  const float* step_scalars;
  float momentum, weight_decay;
  bool nesterov;
  struct Step {
    float lr;
    bool first_step;
  };
  COURSE_HD Step step() const { return {step_scalars[0], step_scalars[1] != 0.0f}; }
  COURSE_HD void operator()(const Step& s, float* const* slot, int64_t j) const {
    const float lr = s.lr;
    const bool first_step = s.first_step;
    float& param = slot[0][j];
    const float g = slot[1][j] + weight_decay * param;
    float direction = g;
    if (momentum != 0.0f) {
      const float buf = first_step ? g : momentum * slot[2][j] + g;
      slot[2][j] = buf;
      direction = nesterov ? g + momentum * buf : buf;
    }
    param -= lr * direction;
  }
};

// AdamW: decoupled weight decay, then Adam with bias correction (1 - beta^t, step t >= 1).
// Slots: parameter, gradient, first moment, second moment. Step scalars: lr, 1 - beta1^t,
// 1 - beta2^t.
struct AdamWUpdate {
  static constexpr int kSlots = 4;
  static constexpr int kStepScalars = 3;
  const float* step_scalars;
  float beta1, beta2, eps, weight_decay;
  struct Step {
    float lr, bias_correction1, bias_correction2;
  };
  COURSE_HD Step step() const { return {step_scalars[0], step_scalars[1], step_scalars[2]}; }
  COURSE_HD void operator()(const Step& s, float* const* slot, int64_t j) const {
    const float lr = s.lr;
    const float bias_correction1 = s.bias_correction1, bias_correction2 = s.bias_correction2;
    float& param = slot[0][j];
    const float g = slot[1][j];
    float& m = slot[2][j];
    float& v = slot[3][j];
    param -= lr * weight_decay * param;
    m = beta1 * m + (1.0f - beta1) * g;
    v = beta2 * v + (1.0f - beta2) * g * g;
    param -= lr * (m / bias_correction1) / (sqrtf(v / bias_correction2) + eps);
  }
};

// Zeroes its one slot: a model's gradients before a step, as PyTorch's foreach zero_.
struct ZeroUpdate {
  static constexpr int kSlots = 1;
  static constexpr int kStepScalars = 0;
  struct Step {};
  COURSE_HD Step step() const { return {}; }
  COURSE_HD void operator()(const Step&, float* const* slot, int64_t j) const { slot[0][j] = 0.0f; }
};

// AdamW's step from a momentum already updated (and averaged) and a frozen variance: the
// parameter moves as in AdamWUpdate, the moments stay. Slots: parameter, first moment, second
// moment. Step scalars: lr, 1 - beta1^t, 1 - beta2^t at the step the variance froze.
struct FrozenVarianceUpdate {
  static constexpr int kSlots = 3;
  static constexpr int kStepScalars = 3;
  const float* step_scalars;
  float eps, weight_decay;
  using Step = AdamWUpdate::Step;
  COURSE_HD Step step() const { return {step_scalars[0], step_scalars[1], step_scalars[2]}; }
  COURSE_HD void operator()(const Step& s, float* const* slot, int64_t j) const {
    float& param = slot[0][j];
    param -= s.lr * weight_decay * param;
    param -=
        s.lr * (slot[1][j] / s.bias_correction1) / (sqrtf(slot[2][j] / s.bias_correction2) + eps);
  }
};

// Lion: the step is the sign of an interpolation between the momentum and the gradient, with
// decoupled weight decay; the momentum then tracks the gradient with the slower beta2.
// Slots: parameter, gradient, momentum. Step scalars: lr.
struct LionUpdate {
  static constexpr int kSlots = 3;
  static constexpr int kStepScalars = 1;
  const float* step_scalars;
  float beta1, beta2, weight_decay;
  struct Step {
    float lr;
  };
  COURSE_HD Step step() const { return {step_scalars[0]}; }
  COURSE_HD void operator()(const Step& s, float* const* slot, int64_t j) const {
    const float lr = s.lr;
    float& param = slot[0][j];
    const float g = slot[1][j];
    float& m = slot[2][j];
    const float c = beta1 * m + (1.0f - beta1) * g;
    const float sign = static_cast<float>((c > 0.0f) - (c < 0.0f));
    param -= lr * weight_decay * param;
    param -= lr * sign;
    m = beta2 * m + (1.0f - beta2) * g;
  }
};

// LARS (You et al. 2017, as NVIDIA's LARC applies it to SGD): d = trust (g + wd w) with the
// tensor's trust ratio, buf = d on the first step else mom buf + d, w -= lr buf.
// Slots: parameter, gradient, momentum buffer, trust ratio (a scalar slot). Step scalars: lr,
// first step (1 or 0).
struct LarsUpdate {
  static constexpr int kSlots = 4;
  static constexpr int kScalarSlots = 1;
  static constexpr int kStepScalars = 2;
  const float* step_scalars;
  float momentum, weight_decay;
  using Step = SgdUpdate::Step;
  COURSE_HD Step step() const { return {step_scalars[0], step_scalars[1] != 0.0f}; }
  COURSE_HD void operator()(const Step& s, float* const* slot, int64_t j) const {
    float& param = slot[0][j];
    const float d = (slot[1][j] + weight_decay * param) * slot[3][0];
    float direction = d;
    if (momentum != 0.0f) {
      direction = s.first_step ? d : momentum * slot[2][j] + d;
      slot[2][j] = direction;
    }
    param -= s.lr * direction;
  }
};

// LAMB's direction (You et al. 2019): the moments as AdamW moves them, and the negated update
// r = -(m^ / (sqrt(v^) + eps) + wd w) written to the direction slot, whose norm makes the trust
// ratio before TrustStep moves w. Slots: parameter, gradient, first moment, second moment,
// direction. Step scalars: 1 - beta1^t, 1 - beta2^t.
struct LambDirection {
  static constexpr int kSlots = 5;
  static constexpr int kStepScalars = 2;
  const float* step_scalars;
  float beta1, beta2, eps, weight_decay;
  struct Step {
    float bias_correction1, bias_correction2;
  };
  COURSE_HD Step step() const { return {step_scalars[0], step_scalars[1]}; }
  COURSE_HD void operator()(const Step& s, float* const* slot, int64_t j) const {
    const float param = slot[0][j], g = slot[1][j];
    float& m = slot[2][j];
    float& v = slot[3][j];
    m = beta1 * m + (1.0f - beta1) * g;
    v = beta2 * v + (1.0f - beta2) * g * g;
    slot[4][j] =
        -((m / s.bias_correction1) / (sqrtf(v / s.bias_correction2) + eps) + weight_decay * param);
  }
};

// w += lr trust r: a parameter along its (negated) direction at its trust ratio (LAMB, 1-bit
// LAMB). Slots: parameter, direction, trust ratio (a scalar slot). Step scalars: lr.
struct TrustStep {
  static constexpr int kSlots = 3;
  static constexpr int kScalarSlots = 1;
  static constexpr int kStepScalars = 1;
  const float* step_scalars;
  struct Step {
    float lr;
  };
  COURSE_HD Step step() const { return {step_scalars[0]}; }
  COURSE_HD void operator()(const Step& s, float* const* slot, int64_t j) const {
    slot[0][j] += s.lr * (slot[2][0] * slot[1][j]);
  }
};

// What a chunked reduction takes of each tensor: the sum of its squares, or its largest element.
enum class ChunkReduce { kSumOfSquares, kMaximum };

// Row r: the reduction of chunk r, chunks[2 r] its address (as an integer) and chunks[2 r + 1]
// its length.
template <ChunkReduce kReduce>
struct ChunkReduction {
  const int64_t* chunks;
  float* partial;
  template <class Lanes>
  COURSE_HD void operator()(int64_t r, const Lanes& lanes) const {
    const float* x = reinterpret_cast<const float*>(chunks[2 * r]);
    const int64_t length = chunks[2 * r + 1];
    const float value = kReduce == ChunkReduce::kMaximum
                            ? lanes.max(length, [&](int64_t j) { return x[j]; })
                            : lanes.sum(length, [&](int64_t j) { return x[j] * x[j]; });
    if (lanes.first()) partial[r] = value;
  }
};

// Index t: out[targets[t]] = the partial results of tensor t's chunks, firsts[t] to
// firsts[t + 1], combined in order (a tensor without chunks: 0, or -inf for a maximum).
template <ChunkReduce kReduce>
struct CombineChunks {
  const float* partial;
  const int64_t* firsts;
  const int64_t* targets;
  float* out;
  COURSE_HD void operator()(int64_t t) const {
    constexpr bool kMax = kReduce == ChunkReduce::kMaximum;
    float total = kMax ? -INFINITY : 0.0f;
    for (int64_t r = firsts[t]; r < firsts[t + 1]; ++r) {
      total = kMax ? Maximum{}(total, partial[r]) : total + partial[r];
    }
    out[targets[t]] = total;
  }
};

}  // namespace course::ops
