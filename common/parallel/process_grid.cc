// Coordinates and the per-axis communicators of the grid.
#include "common/parallel/process_grid.h"

namespace course::parallel {

std::string GridShape::str() const {
  return "dp " + std::to_string(dp) + " x tp " + std::to_string(tp) + " x pp " + std::to_string(pp);
}

ProcessGrid::ProcessGrid(std::shared_ptr<Communicator> world, GridShape shape)
    : world_(std::move(world)), shape_(shape) {
  COURSE_CHECK(shape.dp > 0 && shape.tp > 0 && shape.pp > 0, "a process grid of ", shape.str(),
               ": every axis needs at least one rank");
  COURSE_CHECK(shape.size() == world_->size(), "a process grid of ", shape.str(), " needs ",
               shape.size(), " ranks, the job has ", world_->size());
  const int r = world_->rank();
  at_ = {.dp = (r / shape.tp) % shape.dp, .tp = r % shape.tp, .pp = r / (shape.tp * shape.dp)};
  // Colours: the coordinates on the other two axes; keys: the coordinate on this one.
  tp_ = world_->split(at_.dp + shape.dp * at_.pp, at_.tp);
  dp_ = world_->split(at_.tp + shape.tp * at_.pp, at_.dp);
  pp_ = world_->split(at_.tp + shape.tp * at_.dp, at_.pp);
}

int ProcessGrid::world_rank(const GridCoordinates& at) const {
  COURSE_CHECK(at.dp >= 0 && at.dp < shape_.dp && at.tp >= 0 && at.tp < shape_.tp && at.pp >= 0 &&
                   at.pp < shape_.pp,
               "grid point (dp ", at.dp, ", tp ", at.tp, ", pp ", at.pp, ") is outside ",
               shape_.str());
  return at.tp + shape_.tp * (at.dp + shape_.dp * at.pp);
}

}  // namespace course::parallel
