// The process grid on 8 ranks, for every factorisation dp x cp x tp x pp = 8: each axis's
// communicator holds exactly the ranks that differ from this one along that axis (checked by
// all-reducing world ranks against the sets computed from the layout formula), its rank is
// the coordinate, the pipeline neighbours are the adjacent stages, and a shape that does not
// multiply to the world's size is one clear error on every rank.
#include "common/parallel/comm/process_grid.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace course::parallel {
namespace {

// The sum and the largest of the world ranks in `axis`, reduced over it.
std::pair<int64_t, int64_t> sum_and_max(Communicator& axis, int world_rank) {
  Tensor sum = Tensor::from_vector<int64_t>({world_rank}, {1});
  Tensor max = Tensor::from_vector<int64_t>({world_rank}, {1});
  axis.allreduce(sum)->wait();
  axis.allreduce(max, ReduceOp::kMax)->wait();
  return {sum.to_vector<int64_t>()[0], max.to_vector<int64_t>()[0]};
}

std::vector<GridShape> factorisations(int n) {
  std::vector<GridShape> out;
  for (int dp = 1; dp <= n; ++dp)
    for (int tp = 1; tp <= n; ++tp)
      for (int cp = 1; cp <= n; ++cp)
        if (n % (dp * tp * cp) == 0) out.push_back({dp, tp, n / (dp * tp * cp), cp});
  return out;
}

// The sum and the largest of the world ranks of the grid points that differ from `at` in the
// coordinates `vary` sets (from the layout formula).
template <class Vary>
std::pair<int64_t, int64_t> expected_members(const ProcessGrid& grid, int count, Vary vary) {
  int64_t sum = 0, max = 0;
  for (int i = 0; i < count; ++i) {
    GridCoordinates point = grid.coordinates();
    vary(point, i);
    const int w = grid.world_rank(point);
    sum += w;
    max = std::max<int64_t>(max, w);
  }
  return {sum, max};
}

TEST(ProcessGrid, EveryFactorisationGivesTheAxesOfTheLayout) {
  const auto world = Communicator::world();
  const int r = world->rank();
  for (const GridShape& shape : factorisations(world->size())) {
    SCOPED_TRACE(shape.str());
    const ProcessGrid grid(world, shape);
    const GridCoordinates at = grid.coordinates();
    EXPECT_EQ(grid.world_rank(at), r);
    EXPECT_EQ(grid.tp()->size(), shape.tp);
    EXPECT_EQ(grid.cp()->size(), shape.cp);
    EXPECT_EQ(grid.dp()->size(), shape.dp);
    EXPECT_EQ(grid.pp()->size(), shape.pp);
    EXPECT_EQ(grid.replicas()->size(), shape.dp * shape.cp);
    EXPECT_EQ(grid.tp()->rank(), at.tp);
    EXPECT_EQ(grid.cp()->rank(), at.cp);
    EXPECT_EQ(grid.dp()->rank(), at.dp);
    EXPECT_EQ(grid.pp()->rank(), at.pp);
    EXPECT_EQ(grid.replicas()->rank(), at.cp + shape.cp * at.dp);
    EXPECT_EQ(sum_and_max(*grid.tp(), r),
              expected_members(grid, shape.tp, [](GridCoordinates& p, int i) { p.tp = i; }));
    EXPECT_EQ(sum_and_max(*grid.cp(), r),
              expected_members(grid, shape.cp, [](GridCoordinates& p, int i) { p.cp = i; }));
    EXPECT_EQ(sum_and_max(*grid.dp(), r),
              expected_members(grid, shape.dp, [](GridCoordinates& p, int i) { p.dp = i; }));
    EXPECT_EQ(sum_and_max(*grid.pp(), r),
              expected_members(grid, shape.pp, [](GridCoordinates& p, int i) { p.pp = i; }));
    EXPECT_EQ(sum_and_max(*grid.replicas(), r),
              expected_members(grid, shape.dp * shape.cp, [&](GridCoordinates& p, int i) {
                p.cp = i % shape.cp;
                p.dp = i / shape.cp;
              }));
    // Tensor parallelism is innermost: its ranks are consecutive; context parallelism's next.
    const int64_t tp_sum = sum_and_max(*grid.tp(), r).first;
    EXPECT_EQ(tp_sum, int64_t{shape.tp} * (2 * (r - at.tp) + shape.tp - 1) / 2);
    EXPECT_EQ(r / shape.tp % shape.cp, at.cp);
    EXPECT_EQ(grid.first_stage(), at.pp == 0);
    EXPECT_EQ(grid.last_stage(), at.pp == shape.pp - 1);
    EXPECT_EQ(grid.previous_stage(), at.pp == 0 ? -1 : at.pp - 1);
    EXPECT_EQ(grid.next_stage(), at.pp == shape.pp - 1 ? -1 : at.pp + 1);
  }
}

TEST(ProcessGrid, PipelineNeighboursExchangeOverThePipelineAxis) {
  const auto world = Communicator::world();
  const ProcessGrid grid(world, {.dp = 1, .tp = 1, .pp = world->size()});
  Tensor mine = Tensor::from_vector<int32_t>({grid.coordinates().pp}, {1});
  Tensor from_previous = Tensor::from_vector<int32_t>({-5}, {1});
  WorkPtr received, sent;
  if (!grid.first_stage()) received = grid.pp()->recv(from_previous, grid.previous_stage());
  if (!grid.last_stage()) sent = grid.pp()->send(mine, grid.next_stage());
  if (received) received->wait();
  if (sent) sent->wait();
  EXPECT_EQ(from_previous.to_vector<int32_t>()[0],
            grid.first_stage() ? -5 : grid.coordinates().pp - 1);
}

TEST(ProcessGrid, AShapeOfTheWrongSizeIsOneClearError) {
  const auto world = Communicator::world();
  try {
    ProcessGrid(world, {.dp = 3, .tp = 1, .pp = world->size()});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr("needs " + std::to_string(3 * world->size()) +
                                     " ranks, the job has " + std::to_string(world->size())));
  }
}

}  // namespace
}  // namespace course::parallel
