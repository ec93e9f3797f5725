// The day-2 check: tests of the exercises TP2.1-TP2.5 against hand-computed values, the MPI
// library and the reference copies in common/ (the sampler, the bucket plan, the ring), run on
// 2, 3 and 4 MPI ranks, with cases chosen so that plausible wrong answers fail. A failure on
// one rank ends every rank at once with its message (common/testing/mpi_gtest_main.cc). Built
// on the trainee's exercises (bazel test //day2_ddp:check) and on the solutions
// (//solutions/day2_ddp:check).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/data/permutation.h"
#include "common/parallel/comm/ring_allreduce.h"
#include "common/parallel/data_parallel/bucket_plan.h"
#include "common/testing/world.h"
#include "day2_ddp/exercises.h"

namespace day2 {
namespace {

using course::Shape;

using course::testing::world;

// TP2.1 ----------------------------------------------------------------------------------

TEST(TP2_1, PaddedShardsCoverTheEpochInRoundRobin) {
  const SamplerOptions o{.dataset_size = 10, .shuffle = false};
  // 10 samples over 3 ranks: 4 each, the list padded with samples 0 and 1.
  EXPECT_EQ(rank_indices(o, 0, 3, 0), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(rank_indices(o, 1, 3, 0), (std::vector<int64_t>{1, 4, 7, 0}));
  EXPECT_EQ(rank_indices(o, 2, 3, 0), (std::vector<int64_t>{2, 5, 8, 1}));
  // Padding wraps more than once when the dataset is smaller than the world.
  EXPECT_EQ(rank_indices({.dataset_size = 2, .shuffle = false}, 4, 5, 0),
            (std::vector<int64_t>{0}));
}

TEST(TP2_1, DropLastCutsTheTail) {
  const SamplerOptions o{.dataset_size = 10, .shuffle = false, .drop_last = true};
  EXPECT_EQ(rank_indices(o, 0, 3, 0), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(rank_indices(o, 2, 3, 0), (std::vector<int64_t>{2, 5, 8}));
}

TEST(TP2_1, ShuffledShardsFollowTheEpochsPermutationOnEveryRank) {
  const SamplerOptions o{.dataset_size = 12, .shuffle = true, .seed = 5};
  for (int64_t epoch : {0, 1}) {
    const std::vector<int64_t> order = course::epoch_permutation(12, 5, epoch);
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(rank_indices(o, r, 4, epoch),
                (std::vector<int64_t>{order[r], order[r + 4], order[r + 8]}))
          << "rank " << r << ", epoch " << epoch;
    }
  }
  EXPECT_NE(rank_indices(o, 0, 4, 0), rank_indices(o, 0, 4, 1)) << "set_epoch must reshuffle";
}

TEST(TP2_1, ShuffledAndPaddedShardsRepeatTheShuffledOrder) {
  // 10 samples over 4 ranks: the shuffled order padded with its own first two entries.
  const SamplerOptions o{.dataset_size = 10, .shuffle = true, .seed = 3};
  const std::vector<int64_t> order = course::epoch_permutation(10, 3, 1);
  EXPECT_EQ(rank_indices(o, 2, 4, 1), (std::vector<int64_t>{order[2], order[6], order[0]}));
  EXPECT_EQ(rank_indices(o, 3, 4, 1), (std::vector<int64_t>{order[3], order[7], order[1]}));
}

TEST(TP2_1, EqualsTheReferenceSamplerEverywhere) {
  for (int64_t n : {1, 5, 12, 13, 100}) {
    for (int p : {1, 2, 3, 4, 7}) {
      for (bool shuffle : {false, true}) {
        for (bool drop_last : {false, true}) {
          const SamplerOptions o{
              .dataset_size = n, .shuffle = shuffle, .seed = 11, .drop_last = drop_last};
          for (int r = 0; r < p; ++r) {
            ASSERT_EQ(rank_indices(o, r, p, 2), course::distributed_sample(o, r, p, 2))
                << n << " samples, rank " << r << " of " << p << (shuffle ? ", shuffled" : "")
                << (drop_last ? ", drop_last" : "");
          }
        }
      }
    }
  }
}

// TP2.2 ----------------------------------------------------------------------------------

TEST(TP2_2, GradientsBecomeTheirAverageOverRanks) {
  const int p = world()->size(), r = world()->rank();
  nn::Parameter a(Tensor::empty({3})), b(Tensor::empty({2, 2}));
  a.grad = Tensor::from_vector<float>({1.0f * r, 2.0f, -1.0f * r}, {3});
  b.grad = Tensor::from_vector<float>({1, 2, 3, 4.0f + r}, {2, 2});
  allreduce_gradients({&a, &b}, *world());
  const float mean_rank = (p - 1) / 2.0f;
  EXPECT_EQ(a.grad.to_vector<float>(), (std::vector<float>{mean_rank, 2.0f, -mean_rank}));
  EXPECT_EQ(b.grad.to_vector<float>(), (std::vector<float>{1, 2, 3, 4.0f + mean_rank}));
}

// TP2.3 ----------------------------------------------------------------------------------

TEST(TP2_3, BucketsFillInReverseOrderUpToTheirCaps) {
  // Sizes 4, 8, 100, 4, 4 bytes; first cap 8, then 16.
  EXPECT_EQ(plan_buckets({4, 8, 100, 4, 4}, 16, 8), (parallel::BucketPlan{{4, 3}, {2}, {1, 0}}));
  // PyTorch's default: a small first bucket, then large ones.
  EXPECT_EQ(plan_buckets({10, 10, 10, 10}, 25, 10), (parallel::BucketPlan{{3}, {2, 1, 0}}));
  EXPECT_EQ(plan_buckets({10, 10, 10, 10}, 20, 10), (parallel::BucketPlan{{3}, {2, 1}, {0}}));
  EXPECT_EQ(plan_buckets({5}, 1, 1), (parallel::BucketPlan{{0}}));
  EXPECT_TRUE(plan_buckets({}, 1, 1).empty());
}

TEST(TP2_3, EqualsTheReferencePlanOnAResNetsSizes) {
  std::vector<int64_t> bytes;
  for (int i = 0; i < 62; ++i) bytes.push_back(4 * ((i * 7919) % 300000 + 64));
  for (int64_t cap : {1 << 20, 25 << 20}) {
    EXPECT_EQ(plan_buckets(bytes, cap, 1 << 20),
              parallel::plan_gradient_buckets(bytes, cap, 1 << 20))
        << "cap " << cap;
  }
}

// TP2.4 ----------------------------------------------------------------------------------

TEST(TP2_4, RingAllreduceEqualsTheLibrarysForManySizes) {
  const int p = world()->size(), r = world()->rank();
  for (int64_t n : {1, 2, 3, 5, 7, 64, 1000, 4099}) {
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = std::sin(0.1f * i + r) + 0.25f * r;
    Tensor ring = Tensor::from_vector(values, {n});
    Tensor reference = Tensor::from_vector(values, {n});
    ring_allreduce(ring, *world());
    world()->allreduce(reference)->wait();
    const std::vector<float> got = ring.to_vector<float>(), want = reference.to_vector<float>();
    for (int64_t i = 0; i < n; ++i) {
      // Both add p terms, in other orders.
      ASSERT_NEAR(got[i], want[i], 1e-5f * p * (1 + std::abs(want[i])))
          << "element " << i << " of " << n << " on " << p << " ranks";
    }
  }
}

// Past MPI's eager limit a send completes only once its receive is posted: a ring that waits
// for its send before receiving deadlocks here (and fails after the test's 20 s timeout).
TEST(TP2_4, RingAllreduceOfMegabytesEqualsTheReferenceRing) {
  const int r = world()->rank();
  const int64_t n = (1 << 20) + 3;  // 4 MiB of f32, not divisible by the ranks
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>((i * (r + 3)) % 17) - 8.0f;
  Tensor ring = Tensor::from_vector(values, {n});
  Tensor reference = Tensor::from_vector(values, {n});
  ring_allreduce(ring, *world());
  parallel::ring_allreduce_sum(reference, *world());
  // Small integers: every order of addition gives the same exact sums.
  ASSERT_EQ(ring.to_vector<float>(), reference.to_vector<float>());
}

// On GPU ranks the tensor and every buffer of the ring live on the rank's GPU: a receive buffer
// made on the CPU is refused by the communicator (one exchange, two devices), here as there, on
// the simulated accelerator (each rank its own, sim:local rank, as GPU ranks take theirs).
TEST(TP2_4, RingAllreduceStaysOnTheRanksDevice) {
  const course::Device device = course::Device::sim(world()->local_rank());
  world()->use_device(device);
  const int p = world()->size(), r = world()->rank();
  const int64_t n = 1001;  // not divisible by 2, 3 or 4 ranks
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>((i * (r + 2)) % 13) - 6.0f;
  Tensor ring = Tensor::from_vector(values, {n}, device);
  Tensor reference = Tensor::from_vector(values, {n});
  ring_allreduce(ring, *world());
  world()->allreduce(reference)->wait();
  EXPECT_EQ(ring.device(), device);
  // Small integers: every order of addition gives the same exact sums.
  ASSERT_EQ(ring.to_vector<float>(), reference.to_vector<float>()) << p << " ranks";
}

TEST(TP2_4, RingAllreduceOfAMatrixKeepsItsShape) {
  Tensor m = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  ring_allreduce(m, *world());
  const float p = static_cast<float>(world()->size());
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{p, 2 * p, 3 * p, 4 * p, 5 * p, 6 * p}));
}

// TP2.5 ----------------------------------------------------------------------------------

TEST(TP2_5, WarmupFromTheBaseRateToTheScaledPeakThenCosine) {
  const LargeBatchSchedule s{.base_lr = 0.1f,
                             .base_batch = 256,
                             .global_batch = 1024,
                             .warmup_steps = 10,
                             .total_steps = 110};
  EXPECT_FLOAT_EQ(large_batch_lr(0, s), 0.1f);
  EXPECT_FLOAT_EQ(large_batch_lr(5, s), 0.25f);  // half-way from 0.1 to 0.4
  EXPECT_FLOAT_EQ(large_batch_lr(10, s), 0.4f);  // the linear scaling rule: 0.1 x 4
  EXPECT_FLOAT_EQ(large_batch_lr(60, s), 0.2f);  // cosine half-way down
  EXPECT_NEAR(large_batch_lr(110, s), 0.0f, 1e-7f);
  const LargeBatchSchedule no_warmup{
      .base_lr = 0.2f, .base_batch = 100, .global_batch = 50, .warmup_steps = 0, .total_steps = 4};
  EXPECT_FLOAT_EQ(large_batch_lr(0, no_warmup), 0.1f);
  EXPECT_NEAR(large_batch_lr(1, no_warmup), 0.1f * 0.5f * (1 + std::cos(M_PI / 4)), 1e-7f);
}

TEST(TP2_5, StaysAtZeroPastTheLastStep) {
  const LargeBatchSchedule s{.base_lr = 0.1f,
                             .base_batch = 256,
                             .global_batch = 512,
                             .warmup_steps = 5,
                             .total_steps = 50};
  for (int64_t step : {51, 60, 95, 200}) {
    EXPECT_NEAR(large_batch_lr(step, s), 0.0f, 1e-7f) << "step " << step << " of 50";
  }
}

}  // namespace
}  // namespace day2
