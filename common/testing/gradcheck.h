// Central finite differences against a module's backward pass.
//
// With a fixed random R, L(x, params) = sum(forward(x) * R). backward(R) must give dL/dx and
// add dL/dparam to every Parameter::grad; each is compared at a sample of elements with
// (L(v + h) - L(v - h)) / 2h, computed in double from fresh forward passes.
// Parameters shared by two layers (a tied embedding) are checked through their total gradient.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "common/nn/module.h"
#include "common/testing/tolerance.h"

namespace course::testing {

struct GradCheckOptions {
  int samples_per_tensor = 10;
  double step = 1e-2;
  Tolerance tolerance{2e-3, 2e-2};
  uint32_t seed = 0;
  bool input_gradient = true;  // false for inputs without one (token ids)
};

::testing::AssertionResult check_gradients(nn::Module& module, const Tensor& x,
                                           const GradCheckOptions& options = {});

}  // namespace course::testing
