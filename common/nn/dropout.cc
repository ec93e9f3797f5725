// Dropout layer.
#include "common/nn/dropout.h"

#include <vector>

#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"

namespace course::nn {

Dropout::Dropout(float p, uint32_t seed) : p_(p), rng_(seed) {
  COURSE_CHECK(p >= 0.0f && p < 1.0f, "dropout probability must be in [0, 1), got ", p);
}

Tensor Dropout::run_forward(const Tensor& x, Context& ctx) {
  if (!training_ || p_ == 0.0f) {
    ctx.save(Tensor());  // the identity
    return x;
  }
  std::bernoulli_distribution keep(1.0 - p_);
  std::vector<float> values(x.numel());
  const float scale = 1.0f / (1.0f - p_);
  for (float& v : values) v = keep(rng_) ? scale : 0.0f;
  Tensor mask = cast(Tensor::from_vector(values, x.shape(), x.device()), x.dtype());
  if (x.dim() == 4) mask = to_memory_format(mask, x.memory_format());
  ctx.save(mask);
  return mul(x, mask);
}

Tensor Dropout::run_backward(const Tensor& dy, Context& ctx) {
  const Tensor& mask = ctx.saved<Tensor>("Dropout");
  return mask.defined() ? mul(dy, mask) : dy;
}

}  // namespace course::nn
