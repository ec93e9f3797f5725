// The relative position bias of CoAtNet's transformer stages (Dai et al. 2021): a learned table
// of one scalar per head and 2-D offset between two tokens of the h x w grid, expanded into the
// (heads, T, T) score bias that attention_forward adds (common/kernels/attention.h).
#pragma once

#include <cstdint>

#include "common/tensor/tensor.h"

namespace course {

// Entries of one head's table: (2h - 1)(2w - 1).
int64_t relative_offsets(int64_t h, int64_t w);

// table (heads, (2h - 1)(2w - 1)) f32 -> the (heads, h w, h w) f32 score bias.
Tensor relative_position_bias(const Tensor& table, int64_t h, int64_t w);
// table_grad += the gradient of the table from the bias's (heads, h w, h w) f32 gradient.
void relative_position_bias_backward(const Tensor& bias_grad, Tensor& table_grad, int64_t h,
                                     int64_t w);

}  // namespace course
