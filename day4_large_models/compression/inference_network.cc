// Folding, fusing and quantizing a trained sequential CNN for inference.
#include "day4_large_models/compression/inference_network.h"

#include <cmath>

#include "common/core/error.h"
#include "common/kernels/layout.h"
#include "common/kernels/quantize.h"
#include "common/nn/activation.h"
#include "common/nn/batch_norm.h"
#include "common/nn/conv2d.h"
#include "common/nn/linear.h"
#include "common/nn/pooling.h"
#include "day4_large_models/exercises.h"

namespace day4 {

using namespace course;

namespace {

Tensor host_f32(const Tensor& t) { return t.to(Device::cpu()); }

// w[o] *= gamma[o] / sqrt(var[o] + eps); bias[o] = beta[o] - mean[o] gamma[o] / sqrt(var[o] + eps).
void fold_batch_norm(FusedConvWeights& w, nn::BatchNorm2d& bn) {
  const std::vector<float> gamma = host_f32(bn.weight.f32_value()).to_vector<float>();
  const std::vector<float> beta = host_f32(bn.bias.f32_value()).to_vector<float>();
  const std::vector<float> mean = host_f32(bn.running_mean).to_vector<float>();
  const std::vector<float> var = host_f32(bn.running_var).to_vector<float>();
  const int64_t channels = w.weight.size(0), per_channel = w.weight.numel() / channels;
  float* weight = w.weight.data_as<float>();
  float* bias = w.bias.data_as<float>();
  for (int64_t o = 0; o < channels; ++o) {
    const size_t c = static_cast<size_t>(o);
    const float factor = gamma[c] / std::sqrt(var[c] + bn.eps());
    for (int64_t i = 0; i < per_channel; ++i) weight[o * per_channel + i] *= factor;
    bias[o] = beta[c] - mean[c] * factor;
  }
}

}  // namespace

InferenceNetwork::InferenceNetwork(nn::Module& trained, Device device) : device_(device) {
  training_ = false;
  const std::vector<Child> layers = trained.children();
  for (size_t i = 0; i < layers.size(); ++i) {
    nn::Module* m = layers[i].module;
    const auto next_is = [&]<class Next>() {
      return i + 1 < layers.size() && dynamic_cast<Next*>(layers[i + 1].module) != nullptr;
    };
    Stage stage;
    if (auto* conv = dynamic_cast<nn::Conv2d*>(m)) {
      const Tensor w = host_f32(conv->weight.f32_value());
      stage.weights = {
          .weight = w.clone(),
          .bias = Tensor::from_vector(std::vector<float>(w.size(0), 0.0f), Shape{w.size(0)}),
          .shape = conv->shape()};
      stage.description = "conv " + std::to_string(w.size(1)) + " -> " + std::to_string(w.size(0)) +
                          ", " + std::to_string(w.size(2)) + "x" + std::to_string(w.size(3));
      if (next_is.operator()<nn::BatchNorm2d>()) {
        auto& bn = *static_cast<nn::BatchNorm2d*>(layers[++i].module);
        fold_batch_norm(stage.weights, bn);
        stage.description += ", batch norm folded";
        if (bn.activation() == BatchNormActivation::kRelu) {
          stage.weights.relu = true;
          stage.description += ", ReLU";
        }
      }
    } else if (auto* linear = dynamic_cast<nn::Linear*>(m)) {
      const Tensor w = host_f32(linear->weight.f32_value());
      stage.weights = {.weight = w.clone().view({w.size(0), w.size(1), 1, 1}),
                       .bias = host_f32(linear->bias->f32_value()).clone()};
      stage.linear = true;
      stage.description =
          "linear " + std::to_string(w.size(1)) + " -> " + std::to_string(w.size(0));
    } else if (dynamic_cast<nn::MaxPool2d*>(m) || dynamic_cast<nn::GlobalAvgPool2d*>(m)) {
      stage.borrowed = m;
      stages_.push_back(std::move(stage));
      continue;
    } else {
      COURSE_FAIL("int8 inference takes a plain sequence of convolutions, batch norms, ReLUs, ",
                  "poolings and linear layers (smallnet, tinynet); layer ", i, " (",
                  layers[i].name.empty() ? std::to_string(i) : layers[i].name, ") is not one");
    }
    if (next_is.operator()<nn::ReLU>()) {
      stage.weights.relu = true;
      stage.description += ", ReLU";
      ++i;
    }
    stage.conv = std::make_shared<FusedConv>(stage.weights, 0.0f, device);
    stages_.push_back(std::move(stage));
  }
}

InferenceNetwork InferenceNetwork::quantized(const std::vector<float>& input_scales) const {
  COURSE_CHECK(input_scales.size() == fused_layers(), "int8 network: ", input_scales.size(),
               " input scales for ", fused_layers(), " layers");
  InferenceNetwork out;
  out.training_ = false;
  out.device_ = device_;
  out.stages_ = stages_;
  size_t layer = 0;
  for (Stage& stage : out.stages_) {
    if (!stage.borrowed) stage.input_scale = input_scales[layer++];
  }
  for (size_t i = 0; i < out.stages_.size(); ++i) {
    Stage& stage = out.stages_[i];
    if (stage.borrowed) continue;
    const QuantizedWeight q = quantize_per_channel(stage.weights.weight);  // TP4.20
    FusedConvWeights int8 = stage.weights;
    int8.weight = q.values;
    int8.scales = q.scales;
    stage.conv =
        std::make_shared<FusedConv>(int8, stage.input_scale, device_, out.int8_output_scale(i));
  }
  return out;
}

float InferenceNetwork::int8_output_scale(size_t stage) const {
  for (size_t next = stage + 1; next < stages_.size(); ++next) {
    const Stage& s = stages_[next];
    if (!s.borrowed) return s.input_scale;  // reached through max poolings only
    if (!dynamic_cast<nn::MaxPool2d*>(s.borrowed)) return 0;
  }
  return 0;  // the network's output: f32 logits
}

size_t InferenceNetwork::fused_layers() const {
  size_t n = 0;
  for (const Stage& s : stages_) n += s.borrowed ? 0 : 1;
  return n;
}

std::string InferenceNetwork::describe(size_t layer) const {
  for (const Stage& s : stages_) {
    if (!s.borrowed && layer-- == 0) return s.description;
  }
  COURSE_FAIL("no fused layer ", layer);
}

Tensor InferenceNetwork::run_forward(const Tensor& input, nn::Context&) {
  Tensor x = to_memory_format(input, MemoryFormat::kChannelsLast);
  size_t layer = 0;
  for (const Stage& s : stages_) {
    if (s.borrowed) {
      x = s.borrowed->forward(x);
      continue;
    }
    if (observe_) observe_(layer, x);
    ++layer;
    if (s.linear) x = x.view({x.size(0), x.size(1), 1, 1}, MemoryFormat::kChannelsLast);
    const bool quantize = s.conv->is_int8() && x.dtype() == DType::kF32;
    x = s.conv->forward(quantize ? quantize_symmetric(x, s.input_scale) : x);
    if (s.linear) x = x.view({x.size(0), x.size(1)}, MemoryFormat::kContiguous);
  }
  return x;
}

Tensor InferenceNetwork::run_backward(const Tensor&, nn::Context&) {
  COURSE_FAIL("an InferenceNetwork runs forward only: train the network it was made from");
}

}  // namespace day4
