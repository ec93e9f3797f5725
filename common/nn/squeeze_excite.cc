// Squeeze-and-excitation: the gate's small MLP on the pooled image, then a per-channel scale.
#include "common/nn/squeeze_excite.h"

#include "common/kernels/channel_scale.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/pooling.h"
#include "common/nn/autocast.h"

namespace course::nn {

SqueezeExcite::SqueezeExcite(int64_t channels, int64_t reduced, std::mt19937& rng, Device device)
    : fc1_(channels, reduced, rng, device), fc2_(reduced, channels, rng, device) {
  COURSE_CHECK(channels > 0 && reduced > 0, "a squeeze-excitation of ", channels, " -> ", reduced,
               " channels");
}

std::vector<Module::Child> SqueezeExcite::children() {
  return {{"fc1", &fc1_}, {"", &silu_}, {"fc2", &fc2_}, {"", &sigmoid_}};
}

// Child contexts: 0 fc1, 1 SiLU, 2 fc2, 3 the sigmoid.
Tensor SqueezeExcite::run_forward(const Tensor& x, Context& ctx) {
  Tensor h = fc1_.forward(global_avg_pool_forward(x), ctx.child(0));
  h = fc2_.forward(silu_.forward(h, ctx.child(1)), ctx.child(2));
  const Tensor gate = sigmoid_.forward(h, ctx.child(3));
  Saved saved{x, as_dtype(gate, DType::kF32), gate.dtype()};
  Tensor y = channel_scale_forward(x, saved.gate);
  ctx.save(std::move(saved));
  return y;
}

Tensor SqueezeExcite::run_backward(const Tensor& dy, Context& ctx) {
  const Saved& saved = ctx.saved<Saved>("SqueezeExcite");
  const Tensor grad_out = as_dtype(dy, saved.input.dtype());
  Tensor gate_grad = Tensor::empty(saved.gate.shape(), DType::kF32, dy.device());
  Tensor dx = channel_scale_backward(grad_out, saved.input, saved.gate, gate_grad);
  Tensor g = sigmoid_.backward(as_dtype(gate_grad, saved.gate_dtype), ctx.child(3));
  g = silu_.backward(fc2_.backward(g, ctx.child(2)), ctx.child(1));
  g = fc1_.backward(g, ctx.child(0));
  axpy_(1.0f, global_avg_pool_backward(as_dtype(g, dx.dtype()), saved.input), dx);
  return dx;
}

}  // namespace course::nn
