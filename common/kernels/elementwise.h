// Elementwise tensor operations on the CPU and the GPU (see elementwise_ops.h for the bodies).
//
// Inputs must agree in shape, dtype, device and memory format; outputs are new tensors unless
// the name ends in an underscore (in place). Arithmetic needs a floating dtype.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

void fill_(Tensor& t, double value);  // every element = value (converted to dtype)
Tensor zeros(const Shape& shape, DType dtype = DType::kF32, Device device = Device::cpu(),
             MemoryFormat format = MemoryFormat::kContiguous);
void copy_(Tensor& dst, const Tensor& src);  // same shape/dtype/format; devices may differ
Tensor cast(const Tensor& x, DType dtype);   // round-to-nearest-even into f16/bf16

Tensor add(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
void axpy_(float alpha, const Tensor& x, Tensor& y);  // y += alpha * x
void scale_(Tensor& x, float alpha);                  // x *= alpha

Tensor relu_forward(const Tensor& x);
Tensor add_relu(const Tensor& a, const Tensor& b);  // relu(a + b) in one pass (a residual's end)
Tensor relu_backward(const Tensor& dy, const Tensor& x);  // dy masked by x > 0
Tensor gelu_forward(const Tensor& x);                     // the tanh form, as GPT-2
Tensor gelu_backward(const Tensor& dy, const Tensor& x);  // dy * gelu'(x)
Tensor silu_forward(const Tensor& x);                     // x sigmoid(x)
Tensor silu_backward(const Tensor& dy, const Tensor& x);
Tensor sigmoid_forward(const Tensor& x);
Tensor sigmoid_backward(const Tensor& dy, const Tensor& x);
Tensor tanh_forward(const Tensor& x);
Tensor tanh_backward(const Tensor& dy, const Tensor& x);
// SwiGLU (Llama's feed-forward): x (..., 2F) packed gate | up -> silu(gate) up (..., F).
Tensor swiglu_forward(const Tensor& x);
Tensor swiglu_backward(const Tensor& dy, const Tensor& x);  // dx (..., 2F) from dy (..., F)

}  // namespace course
