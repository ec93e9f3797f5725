// Autocast: the mixed-precision policy of the course (as torch.autocast on the GPU).
//
// Inside an Autocast scope, convolutions and linear layers compute in the scope's dtype (f16 or
// bf16) from f32 master weights; batch norm keeps f32 statistics and parameters and returns the
// dtype it was given; the loss (softmax cross-entropy) computes in f32 whatever the logits'
// dtype. Outside any scope every layer computes in its input's dtype.
#pragma once

#include "common/tensor/tensor.h"

namespace course::nn {

class Autocast {
 public:
  explicit Autocast(DType dtype, bool enabled = true);  // f16 or bf16
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool previous_enabled_;
  DType previous_dtype_;
};

// The dtype a convolution or linear layer computes in for input `x`.
DType matmul_dtype(const Tensor& x);

// `t` in `dtype` (itself when it already is).
Tensor as_dtype(const Tensor& t, DType dtype);

}  // namespace course::nn
