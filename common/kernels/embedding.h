// Token and position embedding, the input layer of a GPT: y[b, t] = wte[token[b, t]] + wpe[t].
// A model with rotary positions (Llama) has no position table: wpe and its gradient undefined.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

// tokens (B, T) i32 on the tables' device (T at most the position table's rows); returns
// (B, T, C) f32. Token values are checked on the host when the tokens live there.
Tensor embedding_forward(const Tensor& tokens, const Tensor& wte, const Tensor& wpe);

// Adds into wte_grad (V, C) and wpe_grad (context, C) from dy (B, T, C) of any floating dtype.
void embedding_backward(const Tensor& dy, const Tensor& tokens, Tensor& wte_grad, Tensor& wpe_grad);

}  // namespace course
