// Bias helpers of fully connected layers: broadcast a bias over rows, and its gradient.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

void add_row_bias_(Tensor& y, const Tensor& bias);     // y (N, C) += bias (C,) f32
void add_column_sums_(const Tensor& x, Tensor& sums);  // sums (C,) f32 += x (N, C) summed over N

}  // namespace course
