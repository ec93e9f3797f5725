// Every parameter value of a module, in parameters() order, as one host vector: what parity
// tests compare between two ways of training the same model; and how many there are.
#pragma once

#include <cstdint>
#include <vector>

#include "common/nn/module.h"

namespace course::testing {

std::vector<float> parameter_values(nn::Module& model);

// The elements of all the module's parameters.
int64_t parameter_count(nn::Module& model);

}  // namespace course::testing
