// Embedding layer.
#include "common/nn/embedding.h"

#include "common/kernels/embedding.h"
#include "common/nn/init.h"

namespace course::nn {

Embedding::Embedding(int64_t vocabulary, int64_t context, int64_t channels, std::mt19937& rng,
                     Device device)
    : wte(normal({vocabulary, channels}, 0.02f, rng, device)),
      wpe(context > 0 ? std::optional<Parameter>(normal({context, channels}, 0.02f, rng, device))
                      : std::nullopt) {}

Tensor Embedding::run_forward(const Tensor& tokens, Context& ctx) {
  Tensor y = embedding_forward(tokens, wte.value, wpe ? wpe->value : Tensor());
  ctx.save(tokens);
  return y;
}

Tensor Embedding::run_backward(const Tensor& dy, Context& ctx) {
  // The tokens have no gradient: the whole backward is the tables' (W).
  ctx.weight_gradient([this, dy, tokens = ctx.saved<Tensor>("Embedding")] {
    Tensor no_positions;
    embedding_backward(dy, tokens, wte.grad, wpe ? wpe->grad : no_positions);
    if (wpe) grad_ready(*wpe);
    grad_ready(wte);
  });
  return Tensor();
}

void Embedding::collect(const std::string& prefix, ModuleState& state) {
  state.parameters.emplace_back(prefix + "wte.weight", &wte);
  if (wpe) state.parameters.emplace_back(prefix + "wpe.weight", &*wpe);
}

}  // namespace course::nn
