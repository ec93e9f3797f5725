// Head-parallel attention: the column- and row-parallel projections around the attention core.
#include "common/parallel/tensor_parallel/tensor_parallel_attention.h"

#include "common/kernels/elementwise.h"
#include "common/parallel/tensor_parallel/rank_groups.h"

namespace course::parallel {

namespace {

// This rank's heads: a p-th of the query and of the key/value heads.
GroupedHeads heads_per_rank(const GroupedHeads& g, int ranks) {
  COURSE_CHECK(g.heads % ranks == 0 && g.kv_heads % ranks == 0, "attention's ", g.heads,
               " query and ", g.kv_heads, " key/value heads do not split over ", ranks,
               " tensor-parallel ranks");
  return {g.heads / ranks, g.kv_heads / ranks, g.head_dim, g.rope_theta};
}

}  // namespace

std::vector<int64_t> qkv_parts(const GroupedHeads& g) {
  return {g.heads * g.head_dim, g.kv_heads * g.head_dim, g.kv_heads * g.head_dim};
}

namespace {

// The whole projection's parts, once the heads are known to split.
std::vector<int64_t> split_qkv_parts(const GroupedHeads& g, int ranks) {
  heads_per_rank(g, ranks);
  return qkv_parts(g);
}

}  // namespace

TensorParallelAttention::TensorParallelAttention(const nn::Linear& qkv,
                                                 const nn::Linear& projection,
                                                 const GroupedHeads& heads, bool causal,
                                                 std::shared_ptr<Communicator> tp,
                                                 Activations between, AttentionNames names)
    : names_(std::move(names)),
      parts_(split_qkv_parts(heads, tp->size())),
      qkv_(grouped_by_rank(qkv, parts_, tp->size()), tp, /*gather_output=*/false, between),
      core_(heads_per_rank(heads, tp->size()), causal),
      projection_(projection, tp, between) {}

void TensorParallelAttention::gather_into(nn::Linear& qkv, nn::Linear& projection) {
  const int ranks = static_cast<int>(qkv.weight.value.size(0) / qkv_.local().weight.value.size(0));
  qkv_.gather_into(qkv);  // grouped by rank
  copy_(qkv.weight.value, rows_ungrouped(qkv.weight.value.clone(), parts_, ranks));
  if (qkv.bias) copy_(qkv.bias->value, rows_ungrouped(qkv.bias->value.clone(), parts_, ranks));
  projection_.gather_into(projection);
}

std::vector<nn::Module::Child> TensorParallelAttention::children() {
  return {{names_.qkv, &qkv_}, {"core", &core_}, {names_.projection, &projection_}};
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
