// Pruning a trained network's weights: masks that zero the convolutions' and linear layers'
// weights (batch norms and biases are left dense), either globally by magnitude (the fraction
// `sparsity` of smallest |w| over all those weights together, so layers lose different shares)
// or in the 2:4 pattern of TP4.17. The masks are re-applied after every optimizer step while the
// network fine-tunes, so pruned weights stay zero.
#pragma once

#include <string>
#include <vector>

#include "common/nn/module.h"

namespace day4 {

struct PrunedWeight {
  std::string name;  // "4.weight"
  course::nn::Parameter* weight;
  course::Tensor mask;  // f32 of the weight's shape on its device: 1 kept, 0 pruned
  bool dense = false;   // 2:4 only: rows that do not divide by 4 keep every weight
};

// The weights pruning works on: every parameter of two or more dimensions.
std::vector<PrunedWeight> prunable_weights(course::nn::Module& model);

// Masks of global magnitude pruning: the floor(sparsity n) smallest magnitudes of the n weights
// are pruned (ties broken by position); sparsity in [0, 1).
void mask_by_global_magnitude(std::vector<PrunedWeight>& weights, double sparsity);

// 2:4 masks (TP4.17) of every weight whose rows (the input dimension) have a multiple of 4
// elements; the others stay dense.
void mask_two_of_four(std::vector<PrunedWeight>& weights);

void apply_masks(const std::vector<PrunedWeight>& weights);  // w *= mask

// The fraction of exact zeros among the weights, read from the weights themselves.
double measured_sparsity(const std::vector<PrunedWeight>& weights);

}  // namespace day4
