// Inference-only convolution fused with its bias and ReLU, its weights prepared once: in f32, or
// in int8 (per-output-channel weight scales, one scale for the input). Day 4's post-training
// quantization runs a trained network on it both ways, so the two differ only in their data
// type: oneDNN's convolution with reordered weights, the bias and the ReLU fused (and int8's
// rescaling in its output scales) on the CPU; on the GPU, im2col and a cuBLASLt int8 GEMM for
// int8, cuDNN for f32, then the per-channel epilogue (common/kernels/quantize.h). An int8 layer
// can write int8 at the next layer's input scale, so activations stay 8-bit between layers. A
// linear layer is the 1x1 convolution of an (N, I, 1, 1) input.
#pragma once

#include <memory>

#include "common/kernels/conv2d.h"
#include "common/tensor/tensor.h"

namespace course {

struct FusedConvWeights {
  Tensor weight;  // (O, C, K, K) on the CPU: f32, or i8 with `scales`
  Tensor scales;  // f32 (O,): w[o] = weight[o] * scales[o], with i8 weights only
  Tensor bias;    // f32 (O,)
  Conv2dShape shape;
  bool relu = false;
};

class FusedConv {
 public:
  // input_scale: the scale of the i8 inputs (x = q * input_scale), with i8 weights.
  // output_scale > 0 (i8 weights only): the output is i8 at that scale, ready for the next int8
  // layer (or a max pooling before it), instead of f32.
  FusedConv(const FusedConvWeights& weights, float input_scale, Device device,
            float output_scale = 0);
  ~FusedConv();
  FusedConv(FusedConv&&) noexcept;
  FusedConv& operator=(FusedConv&&) noexcept;

  // x (N, C, H, W) channels-last on the device: f32, or i8 (quantized with input_scale) with i8
  // weights. Returns (N, O, OH, OW) channels-last: f32, or i8 with an output scale.
  Tensor forward(const Tensor& x);

  bool is_int8() const { return int8_; }
  int64_t out_channels() const { return out_channels_; }

  class Backend {
   public:
    virtual ~Backend() = default;
    virtual Tensor forward(const Tensor& x) = 0;
  };

 private:
  std::unique_ptr<Backend> backend_;
  bool int8_ = false;
  int64_t out_channels_ = 0, in_channels_ = 0;
  Device device_;
};

namespace detail {
// The per-device back ends; weights checked by FusedConv.
std::unique_ptr<FusedConv::Backend> onednn_fused_conv(const FusedConvWeights& weights,
                                                      float input_scale, float output_scale);
std::unique_ptr<FusedConv::Backend> cuda_fused_conv(const FusedConvWeights& weights,
                                                    float input_scale, float output_scale,
                                                    Device device);
}  // namespace detail

}  // namespace course
