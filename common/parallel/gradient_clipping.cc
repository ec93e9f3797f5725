// The global norm as a parallel scheme counts it, and the clip of the gradients it updates.
#include "common/parallel/gradient_clipping.h"

namespace course::parallel {

std::vector<nn::Parameter*> optimized_parameters(TrainingParallelism& parallelism) {
  std::vector<nn::Parameter*> parameters;
  for (const auto& named : parallelism.optimized()) parameters.push_back(named.second);
  return parameters;
}

void apply_clipping(optim::GradientClipping& clipping, TrainingParallelism& parallelism) {
  if (!clipping.on()) return;
  clipping.apply([&] { return parallelism.squared_gradient_norm(); },
                 optimized_parameters(parallelism));
}

}  // namespace course::parallel
