// Gradient clipping by global norm (common/optim/gradient_clipping.h) under any of the course's
// parallel schemes: the norm of the whole model's gradient as the scheme counts it
// (TrainingParallelism::squared_gradient_norm: every element once, however its ranks hold it),
// then every gradient this rank's optimizer updates scaled by the same factor.
#pragma once

#include "common/optim/gradient_clipping.h"
#include "common/parallel/training_parallelism.h"

namespace course::parallel {

// The parameters this rank's optimizer updates (shards, slices, a stage's), whose gradients a
// clip or a loss scaler's unscale touches.
std::vector<nn::Parameter*> optimized_parameters(TrainingParallelism& parallelism);

// Collective when on: a run's clipping (--clip-grad-norm) of this step's gradients.
void apply_clipping(optim::GradientClipping& clipping, TrainingParallelism& parallelism);

}  // namespace course::parallel
