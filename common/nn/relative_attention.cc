// Relative-position self-attention: the table expanded into a score bias per call, the attention
// kernels with it, and the bias's gradient folded back into the table.
#include "common/nn/relative_attention.h"

#include "common/kernels/attention.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/relative_position.h"
#include "common/nn/autocast.h"
#include "common/nn/init.h"

namespace course::nn {

RelativePositionAttention::RelativePositionAttention(int64_t heads, int64_t h, int64_t w,
                                                     std::mt19937& rng, Device device)
    : table(normal({heads, relative_offsets(h, w)}, 0.02f, rng, device)),
      heads_(heads),
      h_(h),
      w_(w) {
  COURSE_CHECK(heads > 0 && h > 0 && w > 0, "relative attention of ", heads, " heads over a ", h,
               "x", w, " grid");
}

Tensor RelativePositionAttention::run_forward(const Tensor& qkv, Context& ctx) {
  COURSE_CHECK(qkv.dim() == 3 && qkv.size(1) == h_ * w_, "this attention was built for a ", h_, "x",
               w_, " grid of ", h_ * w_, " tokens, got ", qkv.str());
  const Tensor bias = relative_position_bias(table.f32_value(), h_, w_);
  AttentionSaved saved;
  Tensor y = attention_forward(qkv, heads_, /*causal=*/false, saved, &bias);
  ctx.save(std::move(saved));
  return y;
}

Tensor RelativePositionAttention::run_backward(const Tensor& dy, Context& ctx) {
  const AttentionSaved& saved = ctx.saved<AttentionSaved>("RelativePositionAttention");
  Tensor bias_grad = zeros(saved.score_bias.shape(), DType::kF32, dy.device());
  Tensor dqkv = attention_backward(as_dtype(dy, saved.dtype()), heads_,
                                   /*causal=*/false, saved, &bias_grad);
  relative_position_bias_backward(bias_grad, table.grad, h_, w_);
  grad_ready(table);
  return dqkv;
}

void RelativePositionAttention::collect(const std::string& prefix, ModuleState& state) {
  state.parameters.emplace_back(prefix + "relative_position_table", &table);
}

}  // namespace course::nn
