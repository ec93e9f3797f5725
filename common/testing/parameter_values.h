// Every parameter value (or gradient) of a module, in parameters() order, as one host vector:
// what parity tests compare between two ways of training the same model.
#pragma once

#include <cstdint>
#include <vector>

#include "common/nn/module.h"

namespace course::testing {

std::vector<float> parameter_values(nn::Module& model);
std::vector<float> parameter_gradients(nn::Module& model);

}  // namespace course::testing
