// The 2:4 pattern of TP4.21 as masks over a network's prunable weights
// (common/nn/weight_pruning.h applies and measures them).
#pragma once

#include <vector>

#include "common/nn/weight_pruning.h"

namespace day4 {

// 2:4 masks (TP4.21) of every weight whose rows (the input dimension) have a multiple of 4
// elements; the others stay dense.
void mask_two_of_four(std::vector<course::nn::PrunedWeight>& weights);

}  // namespace day4
