// The process grid on 8 ranks, for every factorisation dp x tp x pp = 8: each axis's
// communicator holds exactly the ranks that differ from this one along that axis (checked by
// all-reducing world ranks against the sets computed from the layout formula), its rank is
// the coordinate, the pipeline neighbours are the adjacent stages, and a shape that does not
// multiply to the world's size is one clear error on every rank.
#include "common/parallel/process_grid.h"

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
      if (n % (dp * tp) == 0) out.push_back({dp, tp, n / (dp * tp)});
  return out;
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
    EXPECT_EQ(grid.dp()->size(), shape.dp);
    EXPECT_EQ(grid.pp()->size(), shape.pp);
    EXPECT_EQ(grid.tp()->rank(), at.tp);
    EXPECT_EQ(grid.dp()->rank(), at.dp);
    EXPECT_EQ(grid.pp()->rank(), at.pp);
    // The expected members of each axis, from the layout formula.
    int64_t tp_sum = 0, dp_sum = 0, pp_sum = 0, tp_max = 0, dp_max = 0, pp_max = 0;
    for (int i = 0; i < shape.tp; ++i) {
      const int w = grid.world_rank({at.dp, i, at.pp});
      tp_sum += w;
      tp_max = std::max<int64_t>(tp_max, w);
    }
    for (int i = 0; i < shape.dp; ++i) {
      const int w = grid.world_rank({i, at.tp, at.pp});
      dp_sum += w;
      dp_max = std::max<int64_t>(dp_max, w);
    }
    for (int i = 0; i < shape.pp; ++i) {
      const int w = grid.world_rank({at.dp, at.tp, i});
      pp_sum += w;
      pp_max = std::max<int64_t>(pp_max, w);
    }
    EXPECT_EQ(sum_and_max(*grid.tp(), r), std::make_pair(tp_sum, tp_max));
    EXPECT_EQ(sum_and_max(*grid.dp(), r), std::make_pair(dp_sum, dp_max));
    EXPECT_EQ(sum_and_max(*grid.pp(), r), std::make_pair(pp_sum, pp_max));
    // Tensor parallelism is innermost: its ranks are consecutive.
    EXPECT_EQ(tp_sum, int64_t{shape.tp} * (2 * (r - at.tp) + shape.tp - 1) / 2);
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
