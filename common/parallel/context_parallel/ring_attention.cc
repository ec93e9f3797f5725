// Ring attention: the blocks of a rank's two query chunks against the two key chunks it holds at
// each hop, merged by log-sum-exp, with the next hop's keys and values already on their way.
#include "common/parallel/context_parallel/ring_attention.h"

#include <cmath>

#include "common/core/error.h"
#include "common/kernels/attention_heads.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/permute.h"
#include "common/nn/autocast.h"
#include "common/nn/context_split.h"

namespace course::parallel {

namespace {

// (B, 2, Tc, 3, H, D) -> (3, 2, B, H, Tc, D) and (2, B, H, Tc, D) -> (B, 2, Tc, H, D).
const std::vector<int> kQkvToChunkHeads = {3, 1, 0, 4, 2, 5};
const std::vector<int> kChunkHeadsToRows = {1, 0, 3, 2, 4};
constexpr int kKeysAndValuesTag = 0, kGradientsTag = 1;

struct RingDims {
  int64_t batch, chunk, heads, head_dim;
  int64_t matrices() const { return batch * heads; }
};

RingDims dims_of(const Tensor& qkv, int64_t heads) {
  COURSE_CHECK(qkv.dim() == 3 && qkv.size(2) % 3 == 0 && qkv.size(1) % 2 == 0 &&
                   qkv.memory_format() == MemoryFormat::kContiguous,
               "ring attention needs a contiguous (B, 2 T_chunk, 3C) q|k|v tensor, got ",
               qkv.str());
  const int64_t channels = qkv.size(2) / 3;
  COURSE_CHECK(heads > 0 && channels % heads == 0, "attention width ", channels,
               " does not divide into ", heads, " heads");
  return {qkv.size(0), qkv.size(1) / 2, heads, channels / heads};
}

// Matrix `index` of a contiguous (n, B H, Tc, D) stack, as (B H, Tc, D).
Tensor block(const Tensor& stack, int64_t index, const RingDims& n) {
  return stack
      .view({stack.numel() / (n.matrices() * n.chunk * n.head_dim), n.matrices(), n.chunk,
             n.head_dim})
      .slice(index, index + 1)
      .view({n.matrices(), n.chunk, n.head_dim});
}

// Whether query chunk i sees key chunk j, and whether only causally (the diagonal block).
struct BlockMask {
  bool seen, diagonal;
};
BlockMask mask_of(int query_chunk, int key_chunk, bool causal) {
  if (!causal) return {true, false};
  return {key_chunk <= query_chunk, key_chunk == query_chunk};
}

// The ring's neighbours: keys and values go from rank r to r + 1.
struct Ring {
  Communicator& comm;
  int next() const { return (comm.rank() + 1) % comm.size(); }
  int previous() const { return (comm.rank() + comm.size() - 1) % comm.size(); }
  // Sends `outgoing` to the next rank and receives the previous one's into a new tensor.
  WorkPtr pass(const Tensor& outgoing, Tensor& incoming, int tag) {
    incoming = Tensor::empty(outgoing.shape(), outgoing.dtype(), outgoing.device());
    return comm.exchange({send_to(outgoing, next(), tag), receive_from(incoming, previous(), tag)});
  }
};

// One pass around the ring from this rank's keys and values `held` (2, 2, B, H, Tc, D, only
// read): at each
// hop `visit(mine, theirs, diagonal, held)` for every (query slot, key slot) block this rank
// computes, the held block already passing to the next rank meanwhile; `after_hop()` once the
// next hop's block has arrived.
template <class Visit, class AfterHop>
void around_the_ring(Communicator& cp, Tensor held, bool causal, Visit visit, AfterHop after_hop) {
  Ring ring{cp};
  const nn::ContextSplit me{cp.rank(), cp.size()};
  for (int hop = 0; hop < cp.size(); ++hop) {
    const nn::ContextSplit source{(cp.rank() - hop + cp.size()) % cp.size(), cp.size()};
    Tensor incoming;
    WorkPtr passing = hop + 1 < cp.size() ? ring.pass(held, incoming, kKeysAndValuesTag) : nullptr;
    for (int mine = 0; mine < 2; ++mine) {
      for (int theirs = 0; theirs < 2; ++theirs) {
        const BlockMask mask = mask_of(me.chunk(mine), source.chunk(theirs), causal);
        if (mask.seen) visit(mine, theirs, mask.diagonal, held);
      }
    }
    if (passing) {
      passing->wait();
      held = incoming;
    }
    after_hop();
  }
}

}  // namespace

Tensor ring_attention_forward(const Tensor& qkv, int64_t heads, bool causal, Communicator& cp,
                              RingAttentionSaved& saved) {
  const RingDims n = dims_of(qkv, heads);
  saved.qkv_heads = permute(qkv.view({n.batch, 2, n.chunk, 3, n.heads, n.head_dim}),
                            kQkvToChunkHeads);  // (3, 2, B, H, Tc, D)
  // Nothing seen yet: outputs 0, log-sum-exps -inf, which the first block's merge replaces.
  saved.out = zeros({2, n.matrices(), n.chunk, n.head_dim}, qkv.dtype(), qkv.device());
  for (Tensor& lse : saved.lse) {
    lse = Tensor::empty({n.matrices(), n.chunk}, DType::kF32, qkv.device());
    fill_(lse, -INFINITY);
  }
  const auto attend = [&](int mine, int theirs, bool diagonal, const Tensor& held) {
    Tensor out, lse;
    attention_heads_forward(block(saved.qkv_heads, mine, n), block(held, theirs, n),
                            block(held, 2 + theirs, n), diagonal, out, lse);
    Tensor running = block(saved.out, mine, n);
    merge_attention_block(running, saved.lse[mine], out, lse);
  };
  around_the_ring(cp, saved.qkv_heads.slice(1, 3), causal, attend, [] {});
  return permute(saved.out.view({2, n.batch, n.heads, n.chunk, n.head_dim}), kChunkHeadsToRows)
      .view({n.batch, 2 * n.chunk, n.heads * n.head_dim});
}

Tensor ring_attention_backward(const Tensor& dy, int64_t heads, bool causal, Communicator& cp,
                               const RingAttentionSaved& saved) {
  COURSE_CHECK(saved.qkv_heads.defined(), "ring attention backward without its forward");
  const Tensor& qkv_heads = saved.qkv_heads;
  const RingDims n{qkv_heads.size(2), qkv_heads.size(4), heads, qkv_heads.size(5)};
  COURSE_CHECK(qkv_heads.size(3) == heads &&
                   dy.shape() == Shape({n.batch, 2 * n.chunk, n.heads * n.head_dim}) &&
                   dy.dtype() == qkv_heads.dtype(),
               "ring attention backward got dy ", dy.str(), " for a forward of ", qkv_heads.str());
  const Tensor dout = permute(dy.view({n.batch, 2, n.chunk, n.heads, n.head_dim}),
                              inverse_permutation(kChunkHeadsToRows));  // (2, B, H, Tc, D)
  const std::array<Tensor, 2> dots{attention_row_dots(block(saved.out, 0, n), block(dout, 0, n)),
                                   attention_row_dots(block(saved.out, 1, n), block(dout, 1, n))};
  Tensor dqkv_heads = zeros(qkv_heads.shape(), dy.dtype(), dy.device());  // (3, 2, B, H, Tc, D)
  Tensor held_grads = zeros(qkv_heads.slice(1, 3).shape(), dy.dtype(), dy.device());
  const auto attend_back = [&](int mine, int theirs, bool diagonal, const Tensor& held) {
    AttentionHeadGradients grads{block(dqkv_heads, mine, n), block(held_grads, theirs, n),
                                 block(held_grads, 2 + theirs, n), /*accumulate=*/true};
    attention_heads_backward(block(qkv_heads, mine, n), block(held, theirs, n),
                             block(held, 2 + theirs, n), block(dout, mine, n), saved.lse[mine],
                             diagonal, dots[mine], grads);
  };
  // The gradients follow their keys and values; after the last hop they reach their owner.
  Ring ring{cp};
  const auto pass_gradients = [&] {
    if (cp.size() == 1) return;
    Tensor arriving;
    ring.pass(held_grads, arriving, kGradientsTag)->wait();
    held_grads = arriving;
  };
  around_the_ring(cp, qkv_heads.slice(1, 3), causal, attend_back, pass_gradients);
  Tensor own_grads = dqkv_heads.slice(1, 3);
  copy_(own_grads, held_grads);
  return permute(dqkv_heads, inverse_permutation(kQkvToChunkHeads))
      .view({n.batch, 2 * n.chunk, 3 * n.heads * n.head_dim});
}

Tensor RingAttentionCore::forward(const Tensor& qkv, int64_t heads, bool causal,
                                  nn::Context& ctx) const {
  RingAttentionSaved saved;
  Tensor y = ring_attention_forward(qkv, heads, causal, *cp_, saved);
  ctx.save(std::move(saved));
  return y;
}

Tensor RingAttentionCore::backward(const Tensor& dy, int64_t heads, bool causal,
                                   nn::Context& ctx) const {
  const RingAttentionSaved& saved = ctx.saved<RingAttentionSaved>("ring attention");
  return ring_attention_backward(nn::as_dtype(dy, saved.qkv_heads.dtype()), heads, causal, *cp_,
                                 saved);
}

}  // namespace course::parallel
