// The day-4 check: tests of the exercises TP4.1-TP4.7 against hand-computed values and
// single-process references, on 2, 3 and 4 MPI ranks, with cases chosen so that plausible
// wrong answers fail (shards without padding or at wrong offsets, a sum instead of an average,
// a rank keeping only its own shard, parameters or gradients not freed, gradients not reduced,
// a mapping reducing in the wrong direction, gathered features left in rank order).
// A failure on one rank ends every rank at once with its message. Built on the trainee's
// exercises (bazel test //day4_large_models:check) and on the solutions
// (//solutions/day4_large_models:check).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/kernels/elementwise.h"
#include "common/nn/linear.h"
#include "day4_large_models/exercises.h"

namespace day4 {
namespace {

using course::Device;
using course::DType;

std::shared_ptr<parallel::Communicator> world() { return parallel::Communicator::world(); }

// TP4.1 ----------------------------------------------------------------------------------

TEST(TP4_1, ShardsOfAPaddedBufferByHand) {
  // 10 elements on 4 ranks: padded to 12, 3 each; the last rank holds 1 element and 2 of padding.
  for (int r = 0; r < 4; ++r) {
    const nn::FlatRange s = shard_of(10, r, 4);
    EXPECT_EQ(s.begin, 3 * r) << "rank " << r;
    EXPECT_EQ(s.end, 3 * r + 3) << "rank " << r;
  }
  EXPECT_EQ(shard_of(8, 3, 4).begin, 6);  // even: no padding
  EXPECT_EQ(shard_of(8, 3, 4).end, 8);
  EXPECT_EQ(shard_of(3, 3, 4).begin, 3);  // wholly padding
  EXPECT_EQ(shard_of(3, 3, 4).end, 4);
  EXPECT_EQ(shard_of(7, 0, 1).end, 7);
}

TEST(TP4_1, EqualShardsTileThePaddedBufferInRankOrder) {
  for (int64_t numel : {1, 5, 97, 1000, 1001}) {
    for (int world_size = 1; world_size <= 8; ++world_size) {
      const int64_t size = (numel + world_size - 1) / world_size;
      int64_t next = 0;
      for (int r = 0; r < world_size; ++r) {
        const nn::FlatRange s = shard_of(numel, r, world_size);
        EXPECT_EQ(s.begin, next) << numel << " elements, rank " << r << " of " << world_size;
        EXPECT_EQ(s.size(), size) << numel << " elements, rank " << r << " of " << world_size;
        next = s.end;
      }
      EXPECT_EQ(next, size * world_size);
    }
  }
}

// TP4.2 ----------------------------------------------------------------------------------

TEST(TP4_2, EachRankGetsTheAverageOfItsShard) {
  const int p = world()->size(), r = world()->rank();
  const int64_t s = 5;
  // Rank q's gradient of element i is (q + 1)(i + 1): the average over ranks is
  // (p + 1) / 2 (i + 1).
  std::vector<float> mine(s * p);
  for (int64_t i = 0; i < s * p; ++i) mine[i] = static_cast<float>((r + 1) * (i + 1));
  const Tensor full = Tensor::from_vector(mine, {s * p});
  Tensor shard = Tensor::empty({s});
  reduce_scatter_mean(full, shard, *world());
  const std::vector<float> got = shard.to_vector<float>();
  for (int64_t j = 0; j < s; ++j) {
    const int64_t i = r * s + j;
    EXPECT_FLOAT_EQ(got[j], (p + 1) / 2.0f * static_cast<float>(i + 1))
        << "element " << i << " on rank " << r << " of " << p;
  }
  EXPECT_EQ(full.to_vector<float>(), mine) << "the full gradients are an input: leave them";
}

// TP4.3 ----------------------------------------------------------------------------------

TEST(TP4_3, EveryRankGetsEveryShardInRankOrder) {
  const int p = world()->size(), r = world()->rank();
  const int64_t s = 4;
  std::vector<float> shard_values(s);
  for (int64_t j = 0; j < s; ++j) shard_values[j] = static_cast<float>(10 * r + j);
  const Tensor shard = Tensor::from_vector(shard_values, {s});
  Tensor full = Tensor::empty({s * p});
  course::fill_(full, -1.0);
  all_gather_shards(shard, full, *world());
  std::vector<float> expected;
  for (int q = 0; q < p; ++q) {
    for (int64_t j = 0; j < s; ++j) expected.push_back(static_cast<float>(10 * q + j));
  }
  EXPECT_EQ(full.to_vector<float>(), expected) << "on rank " << r;
}

// TP4.4 and TP4.5 ------------------------------------------------------------------------

// A block of 3 -> 5 features: 15 + 5 = 20 parameters, padded on 3 ranks.
constexpr int64_t kIn = 3, kOut = 5, kRows = 2;

nn::Linear make_block() {  // the same values on every rank
  std::mt19937 rng(17);
  return nn::Linear(kIn, kOut, rng, Device::cpu());
}

Tensor input_of(int rank) {
  std::vector<float> v(kRows * kIn);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(i) - 0.5f * rank;
  return Tensor::from_vector(v, {kRows, kIn});
}

Tensor output_gradient() {
  std::vector<float> v(kRows * kOut);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * static_cast<float>(i % 7) - 0.2f;
  return Tensor::from_vector(v, {kRows, kOut});
}

std::vector<nn::Parameter*> params_of(nn::Module& m) { return m.parameters(); }

TEST(TP4_4, ForwardGathersRunsAndFreesTheParameters) {
  const int r = world()->rank();
  nn::Linear reference = make_block();
  const std::vector<float> expected = reference.forward(input_of(r)).to_vector<float>();

  nn::Linear block = make_block();
  parallel::ShardedUnit unit(params_of(block), world());
  unit.release();  // between uses a unit holds only its shard
  nn::Context ctx;
  const Tensor y = fsdp_forward(unit, block, input_of(r), ctx);
  EXPECT_EQ(y.to_vector<float>(), expected) << "the block's output on rank " << r;
  EXPECT_FALSE(unit.gathered()) << "the full parameters must be released after forward";
  EXPECT_FALSE(block.parameters()[0]->value.defined()) << "the weight must be freed";
}

TEST(TP4_5, BackwardAveragesTheGradientsIntoTheShardAndFreesEverything) {
  const int p = world()->size(), r = world()->rank();
  // Reference: the gradients of every rank's input, averaged, in the flat order (weight, bias).
  nn::Linear reference = make_block();
  std::vector<float> average(kOut * kIn + kOut, 0.0f);
  Tensor my_dx;
  for (int q = 0; q < p; ++q) {
    reference.zero_grad();
    nn::Context ctx;
    reference.forward(input_of(q), ctx);
    Tensor dx = reference.backward(output_gradient(), ctx);
    if (q == r) my_dx = dx;
    const std::vector<float> dw = reference.parameters()[0]->grad.to_vector<float>();
    const std::vector<float> db = reference.parameters()[1]->grad.to_vector<float>();
    for (size_t i = 0; i < dw.size(); ++i) average[i] += dw[i] / static_cast<float>(p);
    for (size_t i = 0; i < db.size(); ++i) average[dw.size() + i] += db[i] / static_cast<float>(p);
  }

  nn::Linear block = make_block();
  parallel::ShardedUnit unit(params_of(block), world());
  unit.release();
  nn::Context ctx;
  fsdp_forward(unit, block, input_of(r), ctx);
  const Tensor dx = fsdp_backward(unit, block, output_gradient(), ctx);
  EXPECT_EQ(dx.to_vector<float>(), my_dx.to_vector<float>()) << "the input's gradient, rank " << r;
  const std::vector<float> shard_grad = unit.shard().grad.to_vector<float>();
  const nn::FlatRange range = unit.shard_range();
  for (int64_t i = range.begin; i < range.end; ++i) {
    const float want = i < static_cast<int64_t>(average.size()) ? average[i] : 0.0f;
    EXPECT_NEAR(shard_grad[i - range.begin], want, 1e-6f + 1e-5f * std::abs(want))
        << "flat element " << i << " on rank " << r << " of " << p;
  }
  EXPECT_FALSE(unit.gathered()) << "the full parameters must be released after backward";
  EXPECT_FALSE(unit.has_gradients()) << "the full gradients must be freed after the reduction";
}

// TP4.6 ----------------------------------------------------------------------------------

TEST(TP4_6, FAllReducesBackwardAndGForward) {
  const int p = world()->size(), r = world()->rank();
  // Rank q holds [q + 1, 2]: the sum over the ranks is [p (p + 1) / 2, 2 p].
  const Tensor t = Tensor::from_vector<float>({static_cast<float>(r + 1), 2.0f}, {2});
  const std::vector<float> mine = t.to_vector<float>();
  const std::vector<float> sum = {p * (p + 1) / 2.0f, 2.0f * p};
  EXPECT_EQ(tp_mapping(TpMapping::kF, true, t, *world()).to_vector<float>(), mine)
      << "f's forward is the identity";
  EXPECT_EQ(tp_mapping(TpMapping::kF, false, t, *world()).to_vector<float>(), sum)
      << "f's backward sums the ranks' gradients";
  EXPECT_EQ(tp_mapping(TpMapping::kG, true, t, *world()).to_vector<float>(), sum)
      << "g's forward sums the ranks' partial results";
  EXPECT_EQ(tp_mapping(TpMapping::kG, false, t, *world()).to_vector<float>(), mine)
      << "g's backward is the identity";
  EXPECT_EQ(t.to_vector<float>(), mine) << "the input is not to be changed";
}

// TP4.7 ----------------------------------------------------------------------------------

TEST(TP4_7, GatheredFeaturesAreEachRowsSlicesSideBySide) {
  const int p = world()->size(), r = world()->rank();
  // 3 rows of 2 features on each rank: rank q's feature j of row i is 100 i + 10 q + j.
  std::vector<float> mine;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) mine.push_back(static_cast<float>(100 * i + 10 * r + j));
  }
  const Tensor gathered = gather_features(Tensor::from_vector(mine, {3, 2}), *world());
  ASSERT_EQ(gathered.shape(), (course::Shape{3, 2 * p}));
  std::vector<float> expected;
  for (int i = 0; i < 3; ++i) {
    for (int q = 0; q < p; ++q) {
      for (int j = 0; j < 2; ++j) expected.push_back(static_cast<float>(100 * i + 10 * q + j));
    }
  }
  EXPECT_EQ(gathered.to_vector<float>(), expected) << "on rank " << r;
}

// A column-parallel layer: rank r computes output features [r o/p, (r+1) o/p) from its rows of
// the weight; gathered, they are the whole layer's output.
TEST(TP4_7, AColumnParallelLayerGatheredIsTheWholeLayer) {
  const int p = world()->size(), r = world()->rank();
  std::mt19937 rng(23);
  nn::Linear whole(4, 3 * p, rng, Device::cpu());
  nn::Linear mine(whole.weight.value.slice(3 * r, 3 * r + 3).clone(),
                  whole.bias.value.slice(3 * r, 3 * r + 3).clone());
  std::vector<float> x_values(2 * 5 * 4);
  for (size_t i = 0; i < x_values.size(); ++i)
    x_values[i] = 0.1f * static_cast<float>(i % 9) - 0.3f;
  const Tensor x = Tensor::from_vector(x_values, {2, 5, 4});
  const std::vector<float> expected = whole.forward(x).to_vector<float>();
  const std::vector<float> got = gather_features(mine.forward(x), *world()).to_vector<float>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], 1e-5f) << "output element " << i << " on rank " << r;
  }
}

}  // namespace
}  // namespace day4
