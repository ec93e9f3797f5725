// The average of parameters' gradients over the ranks of a communicator: how replicas of a
// model (data-parallel pipelines, tensor-parallel groups) agree on one gradient after each
// computed its own batch's, all of them reduced at once; their sum, for parts of one batch; and
// the squares of a gradient spread over ranks, summed (gradient clipping's global norm).
#pragma once

#include <vector>

#include "common/nn/module.h"
#include "common/parallel/comm/communicator.h"

namespace course::parallel {

// Collective over `comm`: every rank passes the same parameters in the same order.
void average_gradients(const std::vector<nn::Parameter*>& parameters, Communicator& comm);
// The same without the division: parameters whose ranks each computed part of one batch's
// gradient (sequence parallelism's LayerNorms) end with the whole gradient.
void sum_gradients(const std::vector<nn::Parameter*>& parameters, Communicator& comm);
// Collective over `comm`: `value` summed over its ranks (each rank's part of a global norm's
// squares: its shards, its slices, its stage's, so that every element counts once).
float sum_over_ranks(float value, Communicator& comm);
// The same for a tensor on the CPU or the communicator's device, summed in place and returned
// (stream-ordered on a GPU: the host does not wait).
Tensor sum_over_ranks(Tensor value, Communicator& comm);

}  // namespace course::parallel
