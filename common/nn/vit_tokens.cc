// The Vision Transformer's token layers.
#include "common/nn/vit_tokens.h"

#include "common/kernels/class_token.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/linear.h"
#include "common/kernels/permute.h"
#include "common/nn/autocast.h"
#include "common/nn/init.h"

namespace course::nn {

namespace {

// (N, C, H, W) <-> (N, H W, C).
const std::vector<int> kChannelsLast = {0, 2, 1};

}  // namespace

PatchTokens::PatchTokens(int64_t channels, Device device, bool with_bias) : channels_(channels) {
  if (with_bias) bias.emplace(zeros({channels}, DType::kF32, device));
}

Tensor PatchTokens::run_forward(const Tensor& x, Context& ctx) {
  COURSE_CHECK(x.dim() == 4 && x.size(1) == channels_, "patch tokens need (N, ", channels_,
               ", h, w) patch embeddings, got ", x.str());
  const int64_t n = x.size(0), c = x.size(1), tokens = x.size(2) * x.size(3);
  Tensor out = x.memory_format() == MemoryFormat::kChannelsLast
                   ? x.view({n, tokens, c}, MemoryFormat::kContiguous).clone()
                   : permute(x.view({n, c, tokens}), kChannelsLast);
  if (bias) {
    Tensor rows = out.view({n * tokens, c});
    add_row_bias_(rows, bias->f32_value());
  }
  ctx.save(Saved{x.shape(), x.memory_format()});
  return out;
}

Tensor PatchTokens::run_backward(const Tensor& dy, Context& ctx) {
  const Saved& saved = ctx.saved<Saved>("PatchTokens");
  const int64_t n = saved.input_shape[0], c = saved.input_shape[1];
  const int64_t tokens = saved.input_shape[2] * saved.input_shape[3];
  if (bias) {
    add_column_sums_(dy.view({n * tokens, c}), bias->grad);
    grad_ready(*bias);
  }
  if (saved.format == MemoryFormat::kChannelsLast) {
    return dy.view(saved.input_shape, MemoryFormat::kChannelsLast);
  }
  return permute(dy, kChannelsLast).view(saved.input_shape);
}

void PatchTokens::collect(const std::string& prefix, ModuleState& state) {
  if (bias) state.parameters.emplace_back(prefix + "bias", &*bias);
}

ClassToken::ClassToken(int64_t patches, int64_t channels, std::mt19937& rng, Device device)
    : cls(normal({channels}, 0.02f, rng, device)),
      positions(normal({patches + 1, channels}, 0.02f, rng, device)) {}

Tensor ClassToken::run_forward(const Tensor& patches, Context& ctx) {
  const int64_t built_for = positions.value.size(0) - 1;
  COURSE_CHECK(patches.dim() == 3 && patches.size(1) == built_for,
               "this Vision Transformer was built for ", built_for,
               " patches an image, and got images of ", patches.dim() == 3 ? patches.size(1) : 0,
               ": its images must be the size it was built for (--image-size)");
  ctx.save(Saved{patches.dtype()});
  return class_token_forward(patches, cls.f32_value(), positions.f32_value());
}

Tensor ClassToken::run_backward(const Tensor& dy, Context& ctx) {
  const Saved& saved = ctx.saved<Saved>("ClassToken");
  Tensor dpatches = class_token_backward(dy, cls.grad, positions.grad);
  grad_ready(positions);
  grad_ready(cls);
  return as_dtype(dpatches, saved.dtype);
}

void ClassToken::collect(const std::string& prefix, ModuleState& state) {
  state.parameters.emplace_back(prefix + "cls_token", &cls);
  state.parameters.emplace_back(prefix + "pos_embed", &positions);
}

Tensor FirstTokenPool::run_forward(const Tensor& tokens, Context& ctx) {
  ctx.save(tokens.size(1));
  return first_token(tokens);
}

Tensor FirstTokenPool::run_backward(const Tensor& dy, Context& ctx) {
  return first_token_backward(dy, ctx.saved<int64_t>("FirstTokenPool"));
}

}  // namespace course::nn
