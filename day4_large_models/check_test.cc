// The day-4 check of sharding and the process grid: TP4.1-TP4.5 and TP4.15-TP4.17 against
// hand-computed values and single-process references, on 2, 3 and 4 MPI ranks, with cases
// chosen so that plausible wrong answers fail (shards without padding or at wrong offsets, a sum
// instead of an average, a rank keeping only its own shard, parameters or gradients not freed,
// gradients not reduced, tensor parallelism as the outer axis, replicas averaged over the whole
// world). The tensor-parallel steps TP4.9-TP4.14 are in tensor_parallel_check_test.cc; both
// files make one test. A failure on one rank ends every rank at once with its message. Built on
// the trainee's exercises (bazel test //day4_large_models:check) and on the solutions
// (//solutions/day4_large_models:check).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/kernels/elementwise.h"
#include "common/nn/linear.h"
#include "common/testing/world.h"
#include "day4_large_models/exercises.h"

namespace day4 {
namespace {

using course::Device;
using course::DType;

using course::testing::world;

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

// On the CPU and on each rank's simulated accelerator (a GPU's rules: no scratch on the CPU).
TEST(TP4_2, EachRankGetsTheAverageOfItsShard) {
  const int p = world()->size(), r = world()->rank();
  const int64_t s = 5;
  // Rank q's gradient of element i is (q + 1)(i + 1): the average over ranks is
  // (p + 1) / 2 (i + 1).
  std::vector<float> mine(s * p);
  for (int64_t i = 0; i < s * p; ++i) mine[i] = static_cast<float>((r + 1) * (i + 1));
  for (const Device device : course::testing::check_devices()) {
    const Tensor full = Tensor::from_vector(mine, {s * p}, device);
    Tensor shard = Tensor::empty({s}, course::DType::kF32, device);
    reduce_scatter_mean(full, shard, *world());
    EXPECT_EQ(shard.device(), device);
    const std::vector<float> got = shard.to_vector<float>();
    for (int64_t j = 0; j < s; ++j) {
      const int64_t i = r * s + j;
      EXPECT_FLOAT_EQ(got[j], (p + 1) / 2.0f * static_cast<float>(i + 1))
          << "element " << i << " on rank " << r << " of " << p << ", " << device.str();
    }
    EXPECT_EQ(full.to_vector<float>(), mine) << "the full gradients are an input: leave them";
  }
}

// TP4.3 ----------------------------------------------------------------------------------

TEST(TP4_3, EveryRankGetsEveryShardInRankOrder) {
  const int p = world()->size(), r = world()->rank();
  const int64_t s = 4;
  std::vector<float> shard_values(s);
  for (int64_t j = 0; j < s; ++j) shard_values[j] = static_cast<float>(10 * r + j);
  std::vector<float> expected;
  for (int q = 0; q < p; ++q) {
    for (int64_t j = 0; j < s; ++j) expected.push_back(static_cast<float>(10 * q + j));
  }
  for (const Device device : course::testing::check_devices()) {
    const Tensor shard = Tensor::from_vector(shard_values, {s}, device);
    Tensor full = Tensor::empty({s * p}, course::DType::kF32, device);
    course::fill_(full, -1.0);
    all_gather_shards(shard, full, *world());
    EXPECT_EQ(full.to_vector<float>(), expected) << "on rank " << r << ", " << device.str();
  }
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

// TP4.15 ---------------------------------------------------------------------------------

TEST(TP4_15, CoordinatesByHand) {
  // dp 2 x tp 2 x pp 2: world rank 6 = tp 0 + 2 (dp 1 + 2 pp 1).
  const parallel::GridShape shape{.dp = 2, .tp = 2, .pp = 2};
  const parallel::GridCoordinates at = grid_coordinates(6, shape);
  EXPECT_EQ(at.tp, 0);
  EXPECT_EQ(at.dp, 1);
  EXPECT_EQ(at.pp, 1);
  const parallel::GridCoordinates b = grid_coordinates(5, {.dp = 3, .tp = 2, .pp = 1});
  EXPECT_EQ(b.tp, 1);
  EXPECT_EQ(b.dp, 2);
  EXPECT_EQ(b.pp, 0);
}

TEST(TP4_15, EveryRankOfEveryGridOfEightHasItsOwnPoint) {
  for (const parallel::GridShape& shape : {parallel::GridShape{.dp = 2, .tp = 2, .pp = 2},
                                           parallel::GridShape{.dp = 1, .tp = 4, .pp = 2},
                                           parallel::GridShape{.dp = 4, .tp = 1, .pp = 2},
                                           parallel::GridShape{.dp = 2, .tp = 4, .pp = 1}}) {
    for (int rank = 0; rank < shape.size(); ++rank) {
      const parallel::GridCoordinates at = grid_coordinates(rank, shape);
      EXPECT_EQ(at.tp + shape.tp * (at.dp + shape.dp * at.pp), rank)
          << "world rank " << rank << " of " << shape.str() << " is at (dp " << at.dp << ", tp "
          << at.tp << ", pp " << at.pp << ")";
    }
  }
}

// TP4.16 ---------------------------------------------------------------------------------

// The grid the check runs on: tensor parallelism over 2 ranks when the world is even.
int check_tp() { return world()->size() % 2 == 0 ? 2 : 1; }

TEST(TP4_16, EachGroupHoldsTheRanksOfOneAxisInOrder) {
  const int tp = check_tp(), r = world()->rank();
  const int dp = world()->size() / tp;
  const SubGroups groups = tensor_and_data_groups(*world(), tp);
  ASSERT_TRUE(groups.tensor_parallel && groups.data_parallel);
  EXPECT_EQ(groups.tensor_parallel->size(), tp) << "the tensor-parallel group of rank " << r;
  EXPECT_EQ(groups.data_parallel->size(), dp) << "the data-parallel group of rank " << r;
  EXPECT_EQ(groups.tensor_parallel->rank(), r % tp) << "rank " << r << "'s place in its tp group";
  EXPECT_EQ(groups.data_parallel->rank(), r / tp) << "rank " << r << "'s place in its dp group";
  // Collectives on the sub-groups: the sums of their members' world ranks.
  Tensor tp_sum = Tensor::from_vector<float>({static_cast<float>(r)}, {1});
  Tensor dp_sum = tp_sum.clone();
  groups.tensor_parallel->allreduce(tp_sum)->wait();
  groups.data_parallel->allreduce(dp_sum)->wait();
  const int first_of_replica = r / tp * tp;
  float want_tp = 0, want_dp = 0;
  for (int q = 0; q < tp; ++q) want_tp += static_cast<float>(first_of_replica + q);
  for (int q = 0; q < dp; ++q) want_dp += static_cast<float>(r % tp + q * tp);
  EXPECT_EQ(tp_sum.to_vector<float>()[0], want_tp) << "sum over rank " << r << "'s tp group";
  EXPECT_EQ(dp_sum.to_vector<float>()[0], want_dp) << "sum over rank " << r << "'s dp group";
}

// TP4.17 ---------------------------------------------------------------------------------

TEST(TP4_17, GradientsAreAveragedOverTheReplicasOnly) {
  const int tp = check_tp(), r = world()->rank();
  const int dp = world()->size() / tp;
  const parallel::ProcessGrid grid(world(), {.dp = dp, .tp = tp, .pp = 1});
  // Gradient element i on (dp d, tp t): 10 d + 100 t + i; its mean over the replicas is
  // 5 (dp - 1) + 100 t + i.
  const int d = grid.coordinates().dp, t = grid.coordinates().tp;
  std::vector<float> g(3);
  for (int i = 0; i < 3; ++i) g[i] = static_cast<float>(10 * d + 100 * t + i);
  nn::Parameter a(Tensor::from_vector<float>({1, 2, 3}, {3}), Tensor::from_vector(g, {3}));
  nn::Parameter b(Tensor::from_vector<float>({4, 5, 6}, {3}), Tensor::from_vector(g, {3}));
  average_over_replicas({&a, &b}, *grid.dp());
  std::vector<float> expected(3);
  for (int i = 0; i < 3; ++i) expected[i] = 5.0f * (dp - 1) + 100.0f * t + i;
  EXPECT_EQ(a.grad.to_vector<float>(), expected)
      << "rank " << r << " (dp " << d << ", tp " << t << ")";
  EXPECT_EQ(b.grad.to_vector<float>(), expected) << "rank " << r << ", the second parameter";
  EXPECT_EQ(a.value.to_vector<float>(), (std::vector<float>{1, 2, 3})) << "values are not changed";
}

}  // namespace
}  // namespace day4
