// The reference copies of day 2's algorithms (distributed sampler, bucket plan, ring
// all-reduce) against hand-computed values and the MPI library, on 2 and 4 ranks.
#include <gtest/gtest.h>

#include <cmath>

#include "common/data/distributed_sampler.h"
#include "common/data/permutation.h"
#include "common/parallel/comm/ring_allreduce.h"
#include "common/parallel/data_parallel/bucket_plan.h"

namespace course::parallel {
namespace {

TEST(ReferenceSampler, PadsOrCutsAndDealsRoundRobin) {
  const SamplerOptions plain{.dataset_size = 10, .shuffle = false};
  EXPECT_EQ(distributed_sample(plain, 1, 3, 0), (std::vector<int64_t>{1, 4, 7, 0}));
  EXPECT_EQ(distributed_sample({.dataset_size = 2, .shuffle = false}, 4, 5, 0),
            (std::vector<int64_t>{0}));
  EXPECT_EQ(distributed_sample({.dataset_size = 10, .shuffle = false, .drop_last = true}, 2, 3, 0),
            (std::vector<int64_t>{2, 5, 8}));
  const std::vector<int64_t> order = epoch_permutation(10, 3, 1);
  EXPECT_EQ(distributed_sample({.dataset_size = 10, .seed = 3}, 3, 4, 1),
            (std::vector<int64_t>{order[3], order[7], order[1]}));
  EXPECT_EQ(samples_per_rank({.dataset_size = 10}, 4), 3);
  EXPECT_EQ(samples_per_rank({.dataset_size = 10, .drop_last = true}, 4), 2);
}

TEST(ReferenceBucketPlan, ReverseOrderClosedAtTheCaps) {
  EXPECT_EQ(plan_gradient_buckets({4, 8, 100, 4, 4}, 16, 8), (BucketPlan{{4, 3}, {2}, {1, 0}}));
  EXPECT_EQ(plan_gradient_buckets({10, 10, 10, 10}, 20, 10), (BucketPlan{{3}, {2, 1}, {0}}));
  EXPECT_TRUE(plan_gradient_buckets({}, 1, 1).empty());
}

// Against the sums each rank computes itself (the library's all-reduce takes this same ring
// for large sums, so it is no independent reference).
TEST(ReferenceRing, SumsEveryRanksValues) {
  const auto world = Communicator::world();
  const int p = world->size(), r = world->rank();
  for (int64_t n : {1, 3, 1000, (1 << 18) + 5}) {
    const auto value = [](int64_t i, int rank) { return std::cos(0.01f * i) + rank; };
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = value(i, r);
    Tensor ring = Tensor::from_vector(values, {n});
    ring_allreduce_sum(ring, *world);
    const std::vector<float> got = ring.to_vector<float>();
    for (int64_t i = 0; i < n; ++i) {
      double want = 0;
      for (int q = 0; q < p; ++q) want += value(i, q);
      ASSERT_NEAR(got[i], want, 1e-5 * p * (1 + std::abs(want))) << i << " of " << n;
    }
  }
}

}  // namespace
}  // namespace course::parallel
