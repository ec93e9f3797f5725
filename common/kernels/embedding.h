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

// tokens (any shape) i32 -> their rows in the vocabulary slice [first, first + rows), on their
// device; a token outside the slice gets `rows` (the zero row a vocabulary-parallel embedding
// appends to its slice).
Tensor token_rows_in_slice(const Tensor& tokens, int64_t first, int64_t rows);

}  // namespace course
