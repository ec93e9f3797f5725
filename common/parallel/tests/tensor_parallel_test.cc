// Tensor parallelism against hand-computed values and one process, on 2 and 4 ranks: the
// mappings (f, g, the last dimension's all-gather and its adjoint), a column-parallel linear
// with its output gathered, the embedding cut over the vocabulary, attention with its heads
// split, and the feed-forward pair
// (column-parallel, GELU, row-parallel: one all-reduce each way) through forward, backward and an
// AdamW step, each rank's shards equal to the same rows or columns of the single process's tensors;
// the sequence-parallel mappings by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "common/kernels/elementwise.h"
#include "common/nn/activation.h"
#include "common/optim/optimizer.h"
#include "common/parallel/tensor_parallel/parallel_linear.h"
#include "common/parallel/tensor_parallel/rank_groups.h"
#include "common/parallel/tensor_parallel/sequence_parallel.h"
#include "common/parallel/tensor_parallel/tensor_parallel_attention.h"
#include "common/parallel/tensor_parallel/vocab_parallel_embedding.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/tolerance.h"
#include "common/testing/world.h"

namespace course::parallel {
namespace {

const testing::Tolerance kParity = testing::tolerance_for(DType::kF32);

using testing::world;

// The same pseudo-random (rows, cols) values on every rank.
Tensor replicated(int64_t rows, int64_t cols, int seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> v(rows * cols);
  for (float& x : v) x = normal(rng);
  return Tensor::from_vector<float>(v, {rows, cols});
}

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

TEST(TensorParallelMappings, ByHand) {
  const auto tp = world();
  const int p = tp->size(), r = tp->rank();
  // Rank r holds (1 x 2) [r, 10 r]: gathered along the last dimension on every rank.
  const Tensor mine = Tensor::from_vector<float>({1.0f * r, 10.0f * r}, {1, 2});
  std::vector<float> gathered;
  for (int k = 0; k < p; ++k) gathered.insert(gathered.end(), {1.0f * k, 10.0f * k});
  EXPECT_EQ(values(all_gather_last_dim(mine, *tp)), gathered);
  EXPECT_EQ(values(slice_last_dim(all_gather_last_dim(mine, *tp), r, p)), values(mine));

  // f: identity forward, the ranks' gradients summed backward; g the reverse.
  CopyToTensorParallel f(tp);
  ReduceFromTensorParallel g(tp);
  const Tensor x = Tensor::from_vector<float>({1.0f + r, 2.0f}, {1, 2});
  const float rank_sum = p * (p + 1) / 2.0f;  // of 1 + r
  EXPECT_EQ(values(f.forward(x)), values(x));
  EXPECT_EQ(values(f.backward(x)), (std::vector<float>{rank_sum, 2.0f * p}));
  EXPECT_EQ(values(g.forward(x)), (std::vector<float>{rank_sum, 2.0f * p}));
  EXPECT_EQ(values(g.backward(x)), values(x));
  // The all-gather's adjoint takes this rank's slice of the gradient.
  GatherFromTensorParallel gather(tp);
  EXPECT_EQ(values(gather.forward(mine)), gathered);
  EXPECT_EQ(values(gather.backward(Tensor::from_vector<float>(gathered, {1, 2 * p}))),
            values(mine));
}

TEST(SequenceParallelMappings, ByHand) {
  const auto tp = world();
  const int p = tp->size(), r = tp->rank();
  // (B 2, T p, 1): position t of sequence b on rank q is 100 b + 10 t + q.
  std::vector<float> whole;
  for (int b = 0; b < 2; ++b) {
    for (int t = 0; t < p; ++t) whole.push_back(100.0f * b + 10.0f * t + r);
  }
  const Tensor x = Tensor::from_vector<float>(whole, {2, p, 1});
  // Rank r's position: its own value, and the sum over the ranks (q summed: p (p - 1) / 2).
  const std::vector<float> mine = {10.0f * r + r, 100.0f + 10.0f * r + r};
  const float ranks = p * (p - 1) / 2.0f;
  const std::vector<float> summed = {10.0f * r * p + ranks, (100.0f + 10.0f * r) * p + ranks};
  EXPECT_EQ(values(slice_sequence(x, r, p)), mine);
  EXPECT_EQ(values(reduce_scatter_sequence(x, *tp)), summed);
  // Gathered along T: rank q's position q of every sequence, (2, p, 1).
  std::vector<float> gathered;
  for (int b = 0; b < 2; ++b) {
    for (int q = 0; q < p; ++q) gathered.push_back(100.0f * b + 10.0f * q + q);
  }
  const Tensor my_slice = Tensor::from_vector<float>(mine, {2, 1, 1});
  ASSERT_EQ(all_gather_sequence(my_slice, *tp).shape(), (Shape{2, p, 1}));
  EXPECT_EQ(values(all_gather_sequence(my_slice, *tp)), gathered);
  // Each mapping's backward is its forward's adjoint.
  GatherFromSequenceParallel gather(tp);
  ReduceScatterToSequenceParallel reduce_scatter(tp);
  EXPECT_EQ(values(gather.backward(x)), summed);
  EXPECT_EQ(values(reduce_scatter.backward(my_slice)), gathered);
  EXPECT_THROW(reduce_scatter_sequence(Tensor::from_vector<float>({1, 2, 3}, {1, 3, 1}), *tp),
               Error)
      << "3 positions over " << p << " ranks";
}

TEST(TensorParallelLinear, ColumnParallelWithGatheredOutputIsTheWholeLayer) {
  const auto tp = world();
  std::mt19937 rng(5);
  nn::Linear whole(6, 4 * tp->size(), rng, Device::cpu());
  ColumnParallelLinear column(whole, tp, /*gather_output=*/true);
  const Tensor x = replicated(3, 6, 1), dy = replicated(3, 4 * tp->size(), 2);
  EXPECT_TRUE(testing::all_close(values(column.forward(x)), values(whole.forward(x)), kParity));
  EXPECT_TRUE(testing::all_close(values(column.backward(dy)), values(whole.backward(dy)), kParity));
  const int64_t rows = 4, r = tp->rank();
  EXPECT_TRUE(testing::all_close(values(column.local().weight.grad),
                                 values(whole.weight.grad.slice(r * rows, (r + 1) * rows)),
                                 kParity));
  EXPECT_TRUE(testing::all_close(values(column.local().bias->grad),
                                 values(whole.bias->grad.slice(r * rows, (r + 1) * rows)),
                                 kParity));
}

// The feed-forward block: Linear(C, 4C), GELU, Linear(4C, C), with C = 8.
struct FeedForward {
  nn::Linear up, down;
  FeedForward(std::mt19937& rng) : up(8, 32, rng, Device::cpu()), down(32, 8, rng, Device::cpu()) {}
};

TEST(TensorParallelLinear, ColumnThenRowIsTheWholeFeedForwardThroughAnAdamWStep) {
  const auto tp = world();
  const int p = tp->size(), r = tp->rank();
  std::mt19937 rng(7);
  FeedForward whole(rng);
  ColumnParallelLinear up(whole.up, tp, /*gather_output=*/false);
  RowParallelLinear down(whole.down, tp);
  nn::GELU whole_gelu, gelu;
  const Tensor x = replicated(5, 8, 3), dy = replicated(5, 8, 4);

  const Tensor y_whole = whole.down.forward(whole_gelu.forward(whole.up.forward(x)));
  const Tensor y = down.forward(gelu.forward(up.forward(x)));
  EXPECT_TRUE(testing::all_close(values(y), values(y_whole), kParity));
  const Tensor dx_whole = whole.up.backward(whole_gelu.backward(whole.down.backward(dy)));
  const Tensor dx = up.backward(gelu.backward(down.backward(dy)));
  EXPECT_TRUE(testing::all_close(values(dx), values(dx_whole), kParity));

  optim::AdamW whole_adamw({{"up.weight", &whole.up.weight},
                            {"up.bias", &*whole.up.bias},
                            {"down.weight", &whole.down.weight},
                            {"down.bias", &*whole.down.bias}},
                           {.lr = 1e-2f, .weight_decay = 0.1f});
  optim::AdamW adamw({{"up.weight", &up.local().weight},
                      {"up.bias", &*up.local().bias},
                      {"down.weight", &down.weight},
                      {"down.bias", &*down.bias}},
                     {.lr = 1e-2f, .weight_decay = 0.1f});
  whole_adamw.step();
  adamw.step();
  const int64_t hidden = 32 / p;
  EXPECT_TRUE(testing::all_close(values(up.local().weight.value),
                                 values(whole.up.weight.value.slice(r * hidden, (r + 1) * hidden)),
                                 kParity));
  EXPECT_TRUE(testing::all_close(values(up.local().bias->value),
                                 values(whole.up.bias->value.slice(r * hidden, (r + 1) * hidden)),
                                 kParity));
  EXPECT_TRUE(testing::all_close(values(down.weight.value),
                                 values(slice_last_dim(whole.down.weight.value, r, p)), kParity));
  EXPECT_TRUE(
      testing::all_close(values(down.bias->value), values(whole.down.bias->value), kParity));
}

// The vocabulary cut over the ranks: tokens from every rank's range (and repeated ones) embed as
// the whole table does, each rank's rows get the whole table's gradient rows.
TEST(VocabParallelEmbedding, IsTheWholeEmbeddingThroughAnAdamWStep) {
  const auto tp = world();
  const int p = tp->size(), r = tp->rank();
  const int64_t vocabulary = 6 * p;
  std::mt19937 rng(9);
  nn::Embedding whole(vocabulary, 5, 4, rng, Device::cpu());
  VocabParallelEmbedding sharded(whole, tp);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 10; ++i) tokens.push_back(static_cast<int32_t>((i * 7) % vocabulary));
  tokens.push_back(tokens.front());
  tokens.push_back(static_cast<int32_t>(vocabulary - 1));
  const Tensor x = Tensor::from_vector<int32_t>(tokens, {3, 4});
  const Tensor dy = replicated(12, 4, 6).view({3, 4, 4});
  EXPECT_TRUE(testing::all_close(values(sharded.forward(x)), values(whole.forward(x)), kParity));
  sharded.backward(dy);
  whole.backward(dy);
  optim::AdamW whole_adamw(whole.state().parameters, {.lr = 1e-2f});
  optim::AdamW adamw(sharded.state().parameters, {.lr = 1e-2f});
  whole_adamw.step();
  adamw.step();
  EXPECT_EQ(sharded.first_token(), 6 * r);
  EXPECT_TRUE(testing::all_close(values(sharded.wte.value),
                                 values(whole.wte.value.slice(6 * r, 6 * r + 6)), kParity));
  EXPECT_TRUE(testing::all_close(values(sharded.wpe->value), values(whole.wpe->value), kParity));
  nn::Embedding odd(6 * p + 1, 5, 4, rng, Device::cpu());
  EXPECT_THROW(VocabParallelEmbedding(odd, tp), Error);
}

// Heads split over the ranks, against the whole attention: the rank's q|k|v rows (grouped by
// rank) and output-projection columns get the whole layers' gradients.
void expect_whole_attention(const GroupedHeads& heads, bool biases, bool causal) {
  const auto tp = world();
  const int p = tp->size(), r = tp->rank();
  const int64_t c = heads.heads * heads.head_dim, rows = heads.width();
  std::mt19937 rng(13);
  nn::Linear c_attn(c, rows, rng, Device::cpu()), c_proj(c, c, rng, Device::cpu());
  if (!biases) c_attn.bias.reset(), c_proj.bias.reset();
  nn::SelfAttention core(heads, causal);
  TensorParallelAttention attention(c_attn, c_proj, heads, causal, tp);
  const Tensor x = replicated(2 * 6, c, 8).view({2, 6, c});
  const Tensor dy = replicated(2 * 6, c, 9).view({2, 6, c});
  const Tensor y_whole = c_proj.forward(core.forward(c_attn.forward(x)));
  EXPECT_TRUE(testing::all_close(values(attention.forward(x)), values(y_whole), kParity));
  const Tensor dx_whole = c_attn.backward(core.backward(c_proj.backward(dy)));
  EXPECT_TRUE(testing::all_close(values(attention.backward(dy)), values(dx_whole), kParity));

  const nn::ModuleState mine = attention.state();
  ASSERT_EQ(mine.parameters.size(), biases ? 4u : 2u);
  const Tensor qkv_grads = rows_grouped_by_rank(c_attn.weight.grad, qkv_parts(heads), p);
  const int64_t mine_rows = rows / p;
  EXPECT_EQ(mine.parameters[0].first, "c_attn.weight");
  EXPECT_TRUE(testing::all_close(values(mine.parameters[0].second->grad),
                                 values(qkv_grads.slice(r * mine_rows, (r + 1) * mine_rows)),
                                 kParity));
  const size_t projection = biases ? 2 : 1;
  EXPECT_EQ(mine.parameters[projection].first, "c_proj.weight");
  EXPECT_TRUE(testing::all_close(values(mine.parameters[projection].second->grad),
                                 values(slice_last_dim(c_proj.weight.grad, r, p)), kParity));
  if (!biases) return;
  const Tensor bias_grads = rows_grouped_by_rank(c_attn.bias->grad, qkv_parts(heads), p);
  EXPECT_TRUE(testing::all_close(values(mine.parameters[1].second->grad),
                                 values(bias_grads.slice(r * mine_rows, (r + 1) * mine_rows)),
                                 kParity));
  EXPECT_TRUE(testing::all_close(values(mine.parameters[3].second->grad), values(c_proj.bias->grad),
                                 kParity));
}

// A GPT's attention: 16 channels, 4 heads; 3 heads do not split.
TEST(TensorParallelAttention, IsTheWholeAttention) {
  expect_whole_attention({4, 4, 4, 0.0f}, /*biases=*/true, /*causal=*/true);
  std::mt19937 rng(13);
  nn::Linear c_attn(15, 45, rng, Device::cpu()), c_proj(15, 15, rng, Device::cpu());
  if (world()->size() > 1) {
    EXPECT_THROW(TensorParallelAttention(c_attn, c_proj, {3, 3, 5, 0.0f}, true, world()), Error);
  }
}

// A Vision Transformer's: every token attends to every other, the later ones included.
TEST(TensorParallelAttention, IsTheWholeBidirectionalAttention) {
  expect_whole_attention({4, 4, 4, 0.0f}, /*biases=*/true, /*causal=*/false);
}

// A Llama's: 8 query heads over 4 key/value heads of 2, rotated, no biases; rank r holds the
// queries of heads [2r, 2r + 2) on 4 ranks and the one key/value head they share. Key/value
// heads that do not split over the ranks are refused.
TEST(TensorParallelAttention, IsTheWholeGroupedRotaryAttention) {
  expect_whole_attention({8, 4, 2, 10.0f}, /*biases=*/false, /*causal=*/true);
  std::mt19937 rng(14);
  nn::Linear c_attn(16, 20, rng, Device::cpu()), c_proj(16, 16, rng, Device::cpu());
  if (world()->size() > 1) {
    EXPECT_THAT(testing::error_of([&] {
                  TensorParallelAttention(c_attn, c_proj, {8, 1, 2, 10.0f}, true, world());
                }),
                ::testing::HasSubstr("key/value heads do not split over"));
  }
}

TEST(TensorParallelLinear, FeaturesThatDoNotSplitAreClearErrors) {
  const auto tp = world();
  std::mt19937 rng(1);
  nn::Linear odd(3, 4 * tp->size() + 1, rng, Device::cpu());
  EXPECT_THROW(ColumnParallelLinear(odd, tp, false), Error);
  nn::Linear odd_in(4 * tp->size() + 1, 3, rng, Device::cpu());
  EXPECT_THROW(RowParallelLinear(odd_in, tp), Error);
}

}  // namespace
}  // namespace course::parallel
