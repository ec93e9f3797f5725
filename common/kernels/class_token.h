// The Vision Transformer's class token (Dosovitskiy et al. 2021): a learned vector put before
// the N images' L patch tokens, with the learned position embedding added to all L + 1, and
// read back alone at the head. The copies between token ranges are one kernel (class_token.cu).
#pragma once

#include <cstdint>

#include "common/tensor/tensor.h"

namespace course {

// patches (N, L, C) contiguous, any floating dtype; cls (C,) and positions (L + 1, C) f32.
// Returns (N, L + 1, C) f32: [cls, patches] + positions.
Tensor class_token_forward(const Tensor& patches, const Tensor& cls, const Tensor& positions);

// Adds into cls_grad (C,) and positions_grad (L + 1, C) f32 from dy (N, L + 1, C) of any
// floating dtype; returns the patches' gradient (N, L, C) in dy's dtype.
Tensor class_token_backward(const Tensor& dy, Tensor& cls_grad, Tensor& positions_grad);

// tokens (N, T, C) -> the first (class) token's (N, C), and back: (N, C) -> (N, T, C) with
// zeros at every other token.
Tensor first_token(const Tensor& tokens);
Tensor first_token_backward(const Tensor& dy, int64_t tokens);

}  // namespace course
