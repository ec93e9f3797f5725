// Dropout layer.
#include "common/nn/dropout.h"

#include "common/kernels/dropout.h"
#include "common/kernels/layout.h"

namespace course::nn {

Dropout::Dropout(float p, uint64_t seed) : p_(p), seed_(seed) {
  COURSE_CHECK(p >= 0.0f && p < 1.0f, "dropout probability must be in [0, 1), got ", p);
}

Tensor Dropout::run_forward(const Tensor& x, Context& ctx) {
  if (!training_ || p_ == 0.0f) {
    ctx.save(Saved{true, 0, x.memory_format()});
    return x;
  }
  const Saved saved{false, calls_++, x.memory_format()};
  ctx.save(saved);
  return apply_dropout(x, {.seed = seed_, .offset = saved.offset, .p = p_});
}

Tensor Dropout::run_backward(const Tensor& dy, Context& ctx) {
  const Saved& saved = ctx.saved<Saved>("Dropout");
  if (saved.identity) return dy;
  const Tensor grad = dy.dim() == 4 ? to_memory_format(dy, saved.format) : dy;
  return apply_dropout(grad, {.seed = seed_, .offset = saved.offset, .p = p_});
}

}  // namespace course::nn
