// A trained sequential CNN (smallnet, tinynet) made ready for inference: each convolution with
// the batch norm after it folded into its weights and bias (w' = w gamma / sqrt(var + eps),
// b' = beta - mean gamma / sqrt(var + eps)) and the ReLU after it fused, as one FusedConv; the
// linear layer as a 1x1 FusedConv; the poolings borrowed from the trained network. Built in f32,
// or in int8 from the f32 network's calibrated input scales with the weights quantized per
// output channel by TP4.20; int8 activations stay 8-bit from a convolution through the max
// pooling to the next convolution. Activations run channels-last; the module is inference-only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/kernels/fused_conv.h"
#include "common/nn/module.h"

namespace day4 {

class InferenceNetwork : public course::nn::Module {
 public:
  // The f32 network of `trained` (kept alive by the caller: its poolings are borrowed). Throws
  // one clear error for a network that is not a plain sequence of convolutions, batch norms,
  // ReLUs, poolings and linear layers.
  InferenceNetwork(course::nn::Module& trained, course::Device device);

  // The int8 network: this f32 network's folded weights quantized per output channel
  // (quantize_per_channel), each fused layer's input per tensor with input_scales[i].
  InferenceNetwork quantized(const std::vector<float>& input_scales) const;

  // Calls observe(i, x) with the f32 input of fused layer i on every forward pass (calibration);
  // an empty function stops.
  using InputObserver = std::function<void(size_t layer, const course::Tensor& input)>;
  void set_input_observer(InputObserver observe) { observe_ = std::move(observe); }

  size_t fused_layers() const;
  std::string describe(size_t layer) const;  // "conv 1 -> 32, 3x3, batch norm, ReLU"

 protected:
  course::Tensor run_forward(const course::Tensor& x, course::nn::Context& ctx) override;
  course::Tensor run_backward(const course::Tensor& dy, course::nn::Context& ctx) override;

 private:
  struct Stage {
    course::FusedConvWeights weights;  // f32, folded (the int8 network keeps them too)
    std::shared_ptr<course::FusedConv> conv;
    float input_scale = 0;  // int8 only
    bool linear = false;
    std::string description;
    course::nn::Module* borrowed = nullptr;  // a pooling, instead of a fused layer
  };
  InferenceNetwork() = default;
  // The int8 network's stage `stage` writes i8 at the next fused layer's input scale when only
  // max poolings lie between them (max commutes with the quantization); else f32 (0).
  float int8_output_scale(size_t stage) const;

  std::vector<Stage> stages_;
  course::Device device_;
  InputObserver observe_;
};

}  // namespace day4
