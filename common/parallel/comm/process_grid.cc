// Coordinates and the per-axis communicators of the grid.
#include "common/parallel/comm/process_grid.h"

namespace course::parallel {

std::string GridShape::str() const {
  return "dp " + std::to_string(dp) + (cp > 1 ? " x cp " + std::to_string(cp) : "") + " x tp " +
         std::to_string(tp) + " x pp " + std::to_string(pp);
}

ProcessGrid::ProcessGrid(std::shared_ptr<Communicator> world, GridShape shape)
    : world_(std::move(world)), shape_(shape) {
  COURSE_CHECK(shape.dp > 0 && shape.tp > 0 && shape.pp > 0 && shape.cp > 0, "a process grid of ",
               shape.str(), ": every axis needs at least one rank");
  COURSE_CHECK(shape.size() == world_->size(), "a process grid of ", shape.str(), " needs ",
               shape.size(), " ranks, the job has ", world_->size());
  const int r = world_->rank();
  at_ = {.dp = (r / (shape.tp * shape.cp)) % shape.dp,
         .tp = r % shape.tp,
         .pp = r / (shape.tp * shape.cp * shape.dp),
         .cp = (r / shape.tp) % shape.cp};
  // Colours: the coordinates on the other axes; keys: the coordinate on this one.
  const int tp = at_.tp, cp = at_.cp, dp = at_.dp, pp = at_.pp;
  tp_ = world_->split(cp + shape.cp * (dp + shape.dp * pp), tp);
  cp_ = world_->split(tp + shape.tp * (dp + shape.dp * pp), cp);
  dp_ = world_->split(tp + shape.tp * (cp + shape.cp * pp), dp);
  pp_ = world_->split(tp + shape.tp * (cp + shape.cp * dp), pp);
  replicas_ = world_->split(tp + shape.tp * pp, cp + shape.cp * dp);
}

int ProcessGrid::world_rank(const GridCoordinates& at) const {
  COURSE_CHECK(at.dp >= 0 && at.dp < shape_.dp && at.tp >= 0 && at.tp < shape_.tp && at.pp >= 0 &&
                   at.pp < shape_.pp && at.cp >= 0 && at.cp < shape_.cp,
               "grid point (dp ", at.dp, ", cp ", at.cp, ", tp ", at.tp, ", pp ", at.pp,
               ") is outside ", shape_.str());
  return at.tp + shape_.tp * (at.cp + shape_.cp * (at.dp + shape_.dp * at.pp));
}

}  // namespace course::parallel
