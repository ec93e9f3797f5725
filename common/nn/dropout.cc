// Dropout layer.
#include "common/nn/dropout.h"

#include <vector>

#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"

namespace course::nn {

Dropout::Dropout(float p, uint32_t seed) : p_(p), rng_(seed) {
  COURSE_CHECK(p >= 0.0f && p < 1.0f, "dropout probability must be in [0, 1), got ", p);
}

Tensor Dropout::forward(const Tensor& x) {
  if (!training_ || p_ == 0.0f) {
    mask_ = Tensor();
    return x;
  }
  std::bernoulli_distribution keep(1.0 - p_);
  std::vector<float> values(x.numel());
  const float scale = 1.0f / (1.0f - p_);
  for (float& v : values) v = keep(rng_) ? scale : 0.0f;
  Tensor mask = cast(Tensor::from_vector(values, x.shape(), x.device()), x.dtype());
  mask_ = x.dim() == 4 ? to_memory_format(mask, x.memory_format()) : mask;
  return mul(x, mask_);
}

Tensor Dropout::backward(const Tensor& dy) { return mask_.defined() ? mul(dy, mask_) : dy; }

}  // namespace course::nn
