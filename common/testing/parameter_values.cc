// Concatenating a module's parameter values or gradients.
#include "common/testing/parameter_values.h"

namespace course::testing {

namespace {

std::vector<float> concatenated(nn::Module& model, Tensor nn::Parameter::*member) {
  std::vector<float> out;
  for (nn::Parameter* p : model.parameters()) {
    const std::vector<float> v = (p->*member).to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace

std::vector<float> parameter_values(nn::Module& model) {
  return concatenated(model, &nn::Parameter::value);
}

std::vector<float> parameter_gradients(nn::Module& model) {
  return concatenated(model, &nn::Parameter::grad);
}

}  // namespace course::testing
