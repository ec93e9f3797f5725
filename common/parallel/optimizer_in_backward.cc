// The optimizer in backward: groups updated as their gradients become final, then freed.
#include "common/parallel/optimizer_in_backward.h"

#include <algorithm>

#include "common/kernels/elementwise.h"

namespace course::parallel {

OptimizerInBackward::OptimizerInBackward(optim::Optimizer& optimizer,
                                         TrainingParallelism& parallelism)
    : optimizer_(optimizer) {
  optimizer_.set_update_groups(parallelism.gradient_groups());
  updated_.assign(optimizer_.update_groups().size(), 0);
  for (const auto& [name, p] : optimizer_.parameters()) {
    p->grad_on_demand = true;
    p->grad = Tensor();  // made again by the first backward that adds to it
  }
  parallelism.when_gradients_final([this](size_t group) {
    optimizer_.update_group(group);
    ++updated_.at(group);
    for (size_t i : optimizer_.update_groups()[group]) {
      optimizer_.parameters()[i].second->grad = Tensor();
    }
  });
}

OptimizerInBackward::~OptimizerInBackward() {
  for (const auto& [name, p] : optimizer_.parameters()) {
    p->grad_on_demand = false;
    if (!p->grad.defined()) p->grad = zeros(p->value.shape(), DType::kF32, p->value.device());
  }
}

void OptimizerInBackward::begin_step() {
  std::fill(updated_.begin(), updated_.end(), 0);
  optimizer_.prepare_step();
}

void OptimizerInBackward::end_step() {
  for (size_t g = 0; g < updated_.size(); ++g) {
    COURSE_CHECK(updated_[g] == 1, "the optimizer in backward updated group ", g, " (",
                 optimizer_.parameters()[optimizer_.update_groups()[g].front()].first, ", ...) ",
                 updated_[g],
                 " time(s) in this step, not once: was a parameter left out of the "
                 "backward pass?");
  }
  optimizer_.count_step();
}

}  // namespace course::parallel
