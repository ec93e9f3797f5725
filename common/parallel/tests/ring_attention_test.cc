// Ring attention (context parallelism) on 2 and 4 ranks against one process's attention over the
// whole sequence: each rank's output rows and q|k|v gradient rows must equal the same rows of the
// single process's, causal and bidirectional, with chunks of 3 positions (odd, so an off-by-one
// in a chunk's start shows) and signed scores large enough that a wrong merge cannot hide. (The
// load-balanced positions: common/nn/tests/context_split_test; the blocks' kernels on every
// device: common/kernels/tests/attention_blocks_test.)
#include "common/parallel/context_parallel/ring_attention.h"

#include <gtest/gtest.h>

#include "common/kernels/attention.h"
#include "common/kernels/elementwise.h"
#include "common/nn/context_split.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course::parallel {
namespace {

using testing::random_tensor;
using testing::to_floats;

const testing::Tolerance kParity = {2e-5, 2e-5};  // blockwise sums in another order

// This rank's rows of a whole-sequence tensor.
Tensor my_rows(const Tensor& whole, const Communicator& cp) {
  return nn::ContextSplit{cp.rank(), cp.size()}.rows_of(whole);
}

struct RingCase {
  int64_t batch, chunk, heads, head_dim;
  bool causal;
};

void check_ring_against_one_process(const RingCase& c) {
  const auto cp = Communicator::world();
  cp->set_timeout(20);
  const int64_t seq = 2 * cp->size() * c.chunk, channels = c.heads * c.head_dim;
  // Scores of a few units either way: softmax far from uniform, so every weight matters.
  const Tensor qkv =
      random_tensor({c.batch, seq, 3 * channels}, DType::kF32, Device::cpu(), 11, -2, 2).tensor;
  const Tensor dy =
      random_tensor({c.batch, seq, channels}, DType::kF32, Device::cpu(), 12, -1, 1).tensor;
  AttentionSaved whole;
  const Tensor y = attention_forward(qkv, c.heads, c.causal, whole);
  const Tensor dqkv = attention_backward(dy, c.heads, c.causal, whole);

  RingAttentionSaved saved;
  const Tensor my_y = ring_attention_forward(my_rows(qkv, *cp), c.heads, c.causal, *cp, saved);
  EXPECT_TRUE(testing::all_close(to_floats(my_y), to_floats(my_rows(y, *cp)), kParity))
      << "output rows of rank " << cp->rank();
  const Tensor my_dqkv = ring_attention_backward(my_rows(dy, *cp), c.heads, c.causal, *cp, saved);
  EXPECT_TRUE(testing::all_close(to_floats(my_dqkv), to_floats(my_rows(dqkv, *cp)), kParity))
      << "q|k|v gradient rows of rank " << cp->rank();
}

TEST(RingAttention, CausalEqualsOneProcess) { check_ring_against_one_process({2, 3, 3, 4, true}); }

TEST(RingAttention, BidirectionalEqualsOneProcess) {
  check_ring_against_one_process({1, 2, 2, 5, false});
}

// Every rank sends its keys and values cp - 1 hops forward and, backward, their gradients cp
// hops (the last returns them to their owner) besides the keys and values again.
TEST(RingAttention, SendsEachBlockAroundTheRingOnce) {
  const auto cp = Communicator::world();
  const int64_t batch = 1, chunk = 2, heads = 2, head_dim = 3, channels = heads * head_dim;
  const int64_t seq = 2 * cp->size() * chunk;
  const Tensor qkv =
      random_tensor({batch, seq, 3 * channels}, DType::kF32, Device::cpu(), 5).tensor;
  const Tensor local = my_rows(qkv, *cp);
  const double kv_bytes = 2.0 * local.nbytes() / 3.0;
  cp->reset_traffic();
  RingAttentionSaved saved;
  const Tensor y = ring_attention_forward(local, heads, true, *cp, saved);
  EXPECT_DOUBLE_EQ(cp->traffic().bytes, (cp->size() - 1) * kv_bytes);
  cp->reset_traffic();
  ring_attention_backward(y, heads, true, *cp, saved);
  const int gradient_hops = cp->size() > 1 ? cp->size() : 0;
  EXPECT_DOUBLE_EQ(cp->traffic().bytes, (cp->size() - 1 + gradient_hops) * kv_bytes);
}

}  // namespace
}  // namespace course::parallel
