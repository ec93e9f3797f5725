// The process grid of 4D parallelism: the job's ranks arranged as pp x dp x cp x tp, with one
// communicator per axis, so data, context, tensor and pipeline parallelism each talk among their
// own ranks. Tensor parallelism is the innermost axis (its ranks are consecutive, so on a cluster
// they share a node and its fast links: it talks in every layer), then context (a ring of
// key/value blocks per attention layer, the next most frequent), then data, then pipeline
// (Megatron-LM's order, with cp between dp and tp as in Megatron-Core and picotron):
//   world rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank)).
// The data-parallel replicas and the context-parallel ranks of one replica hold the same
// parameters and each computes a share of the batch's gradient: replicas() averages over both.
// With cp = 1 it is the 3D grid. A grid is an object passed to whatever needs it, never a global.
#pragma once

#include <memory>
#include <string>

#include "common/parallel/comm/communicator.h"

namespace course::parallel {

// cp last, so that the 3D grids' {dp, tp, pp} read as before.
struct GridShape {
  int dp = 1, tp = 1, pp = 1, cp = 1;
  int size() const { return dp * tp * pp * cp; }
  std::string str() const;  // "dp 2 x tp 2 x pp 2", with "x cp 2" after dp when cp > 1
};

struct GridCoordinates {
  int dp = 0, tp = 0, pp = 0, cp = 0;
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
  const std::shared_ptr<Communicator>& cp() const { return cp_; }
  // The dp x cp ranks that hold this rank's parameters (same tp and pp coordinates), ranked
  // cp + cp_size * dp: the gradients' averages and the loss's.
  const std::shared_ptr<Communicator>& replicas() const { return replicas_; }

  // World rank of the grid point.
  int world_rank(const GridCoordinates& at) const;
  // Pipeline neighbours, as ranks of pp(): the previous and next stage, -1 past the ends.
  int previous_stage() const { return at_.pp > 0 ? at_.pp - 1 : -1; }
  int next_stage() const { return at_.pp + 1 < shape_.pp ? at_.pp + 1 : -1; }
  bool first_stage() const { return at_.pp == 0; }
  bool last_stage() const { return at_.pp == shape_.pp - 1; }

 private:
  std::shared_ptr<Communicator> world_, dp_, tp_, pp_, cp_, replicas_;
  GridShape shape_;
  GridCoordinates at_;
};

}  // namespace course::parallel
