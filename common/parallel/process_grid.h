// The process grid of 3D parallelism: the job's ranks arranged as pp x dp x tp, with one
// communicator per axis, so data, tensor and pipeline parallelism each talk among their own
// ranks. Tensor parallelism is the innermost axis (its ranks are consecutive, so on a cluster
// they share a node and its fast links), then data, then pipeline (Megatron-LM's order):
//   world rank = tp_rank + tp * (dp_rank + dp * pp_rank).
// A grid is an object passed to whatever needs it, never a global.
#pragma once

#include <memory>
#include <string>

#include "common/parallel/communicator.h"

namespace course::parallel {

struct GridShape {
  int dp = 1, tp = 1, pp = 1;
  int size() const { return dp * tp * pp; }
  std::string str() const;  // "dp 2 x tp 2 x pp 2"
};

struct GridCoordinates {
  int dp = 0, tp = 0, pp = 0;
};

class ProcessGrid {
 public:
  // Collective over `world`: every rank must call it with the same shape. Throws on every rank
  // when the shape's size is not the world's.
  ProcessGrid(std::shared_ptr<Communicator> world, GridShape shape);

  const GridShape& shape() const { return shape_; }
  const GridCoordinates& coordinates() const { return at_; }
  const std::shared_ptr<Communicator>& world() const { return world_; }
  // The ranks that differ from this one along one axis only; their rank() is the coordinate.
  const std::shared_ptr<Communicator>& dp() const { return dp_; }
  const std::shared_ptr<Communicator>& tp() const { return tp_; }
  const std::shared_ptr<Communicator>& pp() const { return pp_; }

  // World rank of the grid point.
  int world_rank(const GridCoordinates& at) const;
  // Pipeline neighbours, as ranks of pp(): the previous and next stage, -1 past the ends.
  int previous_stage() const { return at_.pp > 0 ? at_.pp - 1 : -1; }
  int next_stage() const { return at_.pp + 1 < shape_.pp ? at_.pp + 1 : -1; }
  bool first_stage() const { return at_.pp == 0; }
  bool last_stage() const { return at_.pp == shape_.pp - 1; }

 private:
  std::shared_ptr<Communicator> world_, dp_, tp_, pp_;
  GridShape shape_;
  GridCoordinates at_;
};

}  // namespace course::parallel
