// Ring attention (context parallelism) on 2 and 4 ranks against one process's attention over the
// whole sequence: each rank's output rows and q|k|v gradient rows must equal the same rows of the
// single process's, causal and bidirectional, with chunks of 3 positions (odd, so an off-by-one
// in a chunk's start shows) and signed scores large enough that a wrong merge cannot hide. The
// load-balanced positions by hand. (The blocks' kernels alone, on every device:
// common/kernels/tests/attention_blocks_test.)
#include "common/parallel/ring_attention.h"

#include <gtest/gtest.h>

#include "common/kernels/attention.h"
#include "common/kernels/elementwise.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course::parallel {
namespace {

using testing::random_tensor;
using testing::to_floats;

const testing::Tolerance kParity = {2e-5, 2e-5};  // blockwise sums in another order

TEST(ContextParallelPositions, ByHand) {
  EXPECT_EQ(context_parallel_positions(8, 0, 2), (std::vector<int32_t>{0, 1, 6, 7}));
  EXPECT_EQ(context_parallel_positions(8, 1, 2), (std::vector<int32_t>{2, 3, 4, 5}));
  EXPECT_EQ(context_parallel_positions(8, 3, 4), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(context_parallel_positions(6, 0, 1), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_NE(testing::error_of([] {
              context_parallel_positions(12, 0, 4);
            }).find("does not cut into 2 x 4 equal chunks"),
            std::string::npos);
  // The rows of a (1, 8, 2) tensor follow the positions.
  std::vector<float> full(16);
  for (int i = 0; i < 16; ++i) full[i] = static_cast<float>(i);
  const Tensor rows = context_parallel_rows(Tensor::from_vector<float>(full, {1, 8, 2}), 1, 2);
  EXPECT_EQ(rows.shape(), Shape({1, 4, 2}));
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11}));
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
  const Tensor my_y = ring_attention_forward(context_parallel_rows(qkv, cp->rank(), cp->size()),
                                             c.heads, c.causal, *cp, saved);
  EXPECT_TRUE(testing::all_close(
      to_floats(my_y), to_floats(context_parallel_rows(y, cp->rank(), cp->size())), kParity))
      << "output rows of rank " << cp->rank();
  const Tensor my_dqkv = ring_attention_backward(context_parallel_rows(dy, cp->rank(), cp->size()),
                                                 c.heads, c.causal, *cp, saved);
  EXPECT_TRUE(testing::all_close(
      to_floats(my_dqkv), to_floats(context_parallel_rows(dqkv, cp->rank(), cp->size())), kParity))
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
  const Tensor local = context_parallel_rows(qkv, cp->rank(), cp->size());
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
