// Attention launches: permutes around the per-head kernels.
#include "common/kernels/attention.h"

#include <cmath>

#include "common/kernels/attention_ops.h"
#include "common/kernels/launch.h"
#include "common/kernels/permute.h"

namespace course {

namespace {

// (B, T, 3, H, D) -> (3, B, H, T, D), and (B, H, T, D) <-> (B, T, H, D).
const std::vector<int> kQkvToHeads = {2, 0, 3, 1, 4};
const std::vector<int> kSwapHeadsAndTime = {0, 2, 1, 3};

struct Dims {
  int64_t batch, seq, heads, head_dim;
  int64_t rows() const { return batch * heads * seq; }
  int64_t head_block() const { return rows() * head_dim; }  // elements of q (or k, or v)
  ops::AttentionShape shape(bool causal) const {
    return {seq, head_dim, 1.0f / std::sqrt(static_cast<float>(head_dim)), causal};
  }
};

Dims dims_of(const Tensor& qkv, int64_t heads) {
  COURSE_CHECK(
      qkv.dim() == 3 && qkv.size(2) % 3 == 0 && qkv.memory_format() == MemoryFormat::kContiguous,
      "attention needs a contiguous (B, T, 3C) q|k|v tensor, got ", qkv.str());
  const int64_t channels = qkv.size(2) / 3;
  COURSE_CHECK(heads > 0 && channels % heads == 0, "attention width ", channels,
               " does not divide into ", heads, " heads");
  const int64_t head_dim = channels / heads;
  COURSE_CHECK(head_dim <= ops::kMaxHeadDim, "attention heads of ", head_dim,
               " channels are over the kernels' limit of ", ops::kMaxHeadDim);
  return {qkv.size(0), qkv.size(1), heads, head_dim};
}

}  // namespace

Tensor attention_forward(const Tensor& qkv, int64_t heads, bool causal, AttentionSaved& saved) {
  const Dims n = dims_of(qkv, heads);
  saved.qkv_heads = permute(qkv.view({n.batch, n.seq, 3, n.heads, n.head_dim}), kQkvToHeads);
  saved.out_heads = Tensor::empty({n.batch, n.heads, n.seq, n.head_dim}, qkv.dtype(), qkv.device());
  saved.lse = Tensor::empty({n.batch, n.heads, n.seq}, DType::kF32, qkv.device());
  visit_floating(qkv.dtype(), "attention_forward", [&]<class T>() {
    const T* q = saved.qkv_heads.data_as<T>();
    for_each_index(qkv.device(), n.rows(),
                   ops::AttentionForward<T>{q, q + n.head_block(), q + 2 * n.head_block(),
                                            saved.out_heads.data_as<T>(),
                                            saved.lse.data_as<float>(), n.shape(causal)},
                   n.seq * n.head_dim);
  });
  return permute(saved.out_heads, kSwapHeadsAndTime).view({n.batch, n.seq, n.heads * n.head_dim});
}

Tensor attention_backward(const Tensor& dy, int64_t heads, bool causal,
                          const AttentionSaved& saved) {
  COURSE_CHECK(saved.qkv_heads.defined(), "attention backward without its forward");
  const Tensor& qkv_heads = saved.qkv_heads;
  const Dims n{qkv_heads.size(1), qkv_heads.size(3), heads, qkv_heads.size(4)};
  COURSE_CHECK(qkv_heads.size(2) == heads &&
                   dy.shape() == Shape({n.batch, n.seq, n.heads * n.head_dim}) &&
                   dy.dtype() == qkv_heads.dtype(),
               "attention backward got dy ", dy.str(), " for a forward of ", qkv_heads.str());
  const Tensor dout = permute(dy.view({n.batch, n.seq, n.heads, n.head_dim}), kSwapHeadsAndTime);
  Tensor dqkv_heads = Tensor::empty(qkv_heads.shape(), dy.dtype(), dy.device());
  Tensor delta = Tensor::empty({n.rows()}, DType::kF32, dy.device());
  visit_floating(dy.dtype(), "attention_backward", [&]<class T>() {
    const T* q = qkv_heads.data_as<T>();
    const T *k = q + n.head_block(), *v = q + 2 * n.head_block();
    T* dq = dqkv_heads.data_as<T>();
    const ops::AttentionShape shape = n.shape(causal);
    for_each_index(dy.device(), n.rows(),
                   ops::AttentionBackwardQuery<T>{q, k, v, saved.out_heads.data_as<T>(),
                                                  dout.data_as<T>(), saved.lse.data_as<float>(),
                                                  delta.data_as<float>(), dq, shape},
                   2 * n.seq * n.head_dim);
    for_each_index(dy.device(), n.rows(),
                   ops::AttentionBackwardKey<T>{
                       q, k, v, dout.data_as<T>(), saved.lse.data_as<float>(),
                       delta.data_as<float>(), dq + n.head_block(), dq + 2 * n.head_block(), shape},
                   2 * n.seq * n.head_dim);
  });
  return permute(dqkv_heads, inverse_permutation(kQkvToHeads))
      .view({n.batch, n.seq, 3 * n.heads * n.head_dim});
}

}  // namespace course
