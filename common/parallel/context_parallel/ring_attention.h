// Context parallelism's attention (ring attention, Liu et al. 2023): each sample's sequence is
// cut over the cp ranks, every rank holds the queries, keys and values of its own positions, and
// the keys and values travel once around the ring of ranks while each rank attends its queries
// to the block it holds; the blocks' results merge by their log-sum-exps (attention_heads.h), so
// no rank ever holds the whole sequence's keys or a (T, T) score matrix.
//
// Causal load balance (common/nn/context_split.h): the sequence is cut into 2 cp chunks and rank
// r holds chunks r and 2 cp - 1 - r, an early and a late one, so every rank has the same number
// of (query, key) pairs to compute. Under a causal mask a query chunk i attends key chunk j fully
// when j < i, causally when j = i, not at all when j > i.
//
// The backward is a ring too: the keys and values go round again, with their gradients
// travelling beside them and gathering each rank's contribution, and after the last hop each
// rank holds the gradients of its own keys and values.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "common/nn/attention_core.h"
#include "common/parallel/comm/communicator.h"
#include "common/tensor/tensor.h"

namespace course::parallel {

struct RingAttentionSaved {
  Tensor qkv_heads;           // (3, 2, B H, T_chunk, D): this rank's q, k, v by chunk
  Tensor out;                 // (2, B H, T_chunk, D)
  std::array<Tensor, 2> lse;  // (B H, T_chunk) f32 per chunk, over every key seen
};

// qkv (B, T_local, 3C) of this rank's positions (T_local = 2 T_chunk) -> (B, T_local, C), the
// rows of the whole sequence's attention at those positions. Collective over `cp`.
Tensor ring_attention_forward(const Tensor& qkv, int64_t heads, bool causal, Communicator& cp,
                              RingAttentionSaved& saved);

// d(qkv) (B, T_local, 3C) from dy (B, T_local, C). Collective over `cp`.
Tensor ring_attention_backward(const Tensor& dy, int64_t heads, bool causal, Communicator& cp,
                               const RingAttentionSaved& saved);

// A self-attention layer's core (nn::SelfAttention::set_core) that attends through the ring.
class RingAttentionCore : public nn::AttentionCore {
 public:
  explicit RingAttentionCore(std::shared_ptr<Communicator> cp) : cp_(std::move(cp)) {}
  Tensor forward(const Tensor& qkv, int64_t heads, bool causal, nn::Context& ctx) const override;
  Tensor backward(const Tensor& dy, int64_t heads, bool causal, nn::Context& ctx) const override;
  nn::ContextSplit split() const override { return {cp_->rank(), cp_->size()}; }

 private:
  std::shared_ptr<Communicator> cp_;
};

}  // namespace course::parallel
