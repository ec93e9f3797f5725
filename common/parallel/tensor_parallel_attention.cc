// Head-parallel attention: the column- and row-parallel projections around the attention core.
#include "common/parallel/tensor_parallel_attention.h"

#include "common/kernels/elementwise.h"
#include "common/kernels/permute.h"

namespace course::parallel {

namespace {

int64_t heads_per_rank(int64_t heads, int ranks) {
  COURSE_CHECK(heads % ranks == 0, "attention's ", heads, " heads do not split over ", ranks,
               " tensor-parallel ranks");
  return heads / ranks;
}

}  // namespace

nn::Linear grouped_by_rank(const nn::Linear& c_attn, int ranks) {
  const int64_t rows = c_attn.weight.value.size(0), in = c_attn.weight.value.size(1);
  COURSE_CHECK(rows % (3 * ranks) == 0, "a q|k|v projection of ", rows,
               " rows does not split over ", ranks, " ranks");
  const int64_t per_rank = rows / 3 / ranks;
  // (3, p, C/p, in) -> (p, 3, C/p, in), and the bias alike.
  const Tensor weight =
      permute(c_attn.weight.value.view({3, ranks, per_rank, in}), {1, 0, 2, 3}).view({rows, in});
  const Tensor bias = permute(c_attn.bias->value.view({3, ranks, per_rank}), {1, 0, 2}).view({rows});
  return nn::Linear(weight, bias);
}

Tensor ungrouped_qkv_rows(const Tensor& grouped, int ranks) {
  const int64_t rows = grouped.size(0), rest = grouped.numel() / rows;
  // (p, 3, C/p, rest) -> (3, p, C/p, rest)
  return permute(grouped.view({ranks, 3, rows / 3 / ranks, rest}), {1, 0, 2, 3})
      .view(grouped.shape());
}

TensorParallelAttention::TensorParallelAttention(const nn::Linear& c_attn, const nn::Linear& c_proj,
                                                 int64_t heads, std::shared_ptr<Communicator> tp,
                                                 Activations between)
    : qkv_(grouped_by_rank(c_attn, tp->size()), tp, /*gather_output=*/false, between),
      core_(heads_per_rank(heads, tp->size()), /*causal=*/true),
      projection_(c_proj, tp, between) {}

void TensorParallelAttention::gather_into(nn::Linear& c_attn, nn::Linear& c_proj) {
  const int ranks =
      static_cast<int>(c_attn.weight.value.size(0) / qkv_.local().weight.value.size(0));
  qkv_.gather_into(c_attn);  // grouped by rank
  copy_(c_attn.weight.value, ungrouped_qkv_rows(c_attn.weight.value.clone(), ranks));
  copy_(c_attn.bias->value, ungrouped_qkv_rows(c_attn.bias->value.clone(), ranks));
  projection_.gather_into(c_proj);
}

std::vector<nn::Module::Child> TensorParallelAttention::children() {
  return {{"c_attn", &qkv_}, {"core", &core_}, {"c_proj", &projection_}};
}

Tensor TensorParallelAttention::run_forward(const Tensor& x, nn::Context& ctx) {
  const Tensor qkv = qkv_.forward(x, ctx.child(0));
  return projection_.forward(core_.forward(qkv, ctx.child(1)), ctx.child(2));
}

Tensor TensorParallelAttention::run_backward(const Tensor& dy, nn::Context& ctx) {
  const Tensor d_heads = projection_.backward(dy, ctx.child(2));
  return qkv_.backward(core_.backward(d_heads, ctx.child(1)), ctx.child(0));
}

}  // namespace course::parallel
