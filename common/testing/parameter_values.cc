// Concatenating a module's parameter values.
#include "common/testing/parameter_values.h"

namespace course::testing {

std::vector<float> parameter_values(nn::Module& model) {
  std::vector<float> out;
  for (nn::Parameter* p : model.parameters()) {
    const std::vector<float> v = p->value.to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace course::testing
