// Pruning a trained network's weights by masks that zero the convolutions' and linear layers'
// weights (batch norms and biases are left dense): the weights to prune, masks by global
// magnitude (the fraction `sparsity` of smallest |w| over all those weights together, so layers
// lose different shares), and the masks applied and measured. A mask is re-applied after every
// optimizer step while the network fine-tunes, so pruned weights stay zero. Other patterns (day
// 4's 2:4 masks, TP4.21) fill the same masks.
#pragma once

#include <string>
#include <vector>

#include "common/nn/module.h"

namespace course::nn {

struct PrunedWeight {
  std::string name;  // "4.weight"
  Parameter* weight;
  Tensor mask;         // f32 of the weight's shape on its device: 1 kept, 0 pruned
  bool dense = false;  // a pattern that skips this weight (2:4 on rows that do not divide by 4)
};

// The weights pruning works on: every parameter of two or more dimensions.
std::vector<PrunedWeight> prunable_weights(Module& model);

// Masks of global magnitude pruning: the floor(sparsity n) smallest magnitudes of the n weights
// are pruned (ties broken by position); sparsity in [0, 1).
void mask_by_global_magnitude(std::vector<PrunedWeight>& weights, double sparsity);

void apply_masks(const std::vector<PrunedWeight>& weights);  // w *= mask

// The fraction of exact zeros among the weights, read from the weights themselves.
double measured_sparsity(const std::vector<PrunedWeight>& weights);

}  // namespace course::nn
