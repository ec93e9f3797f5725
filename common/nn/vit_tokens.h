// The Vision Transformer's token plumbing around its encoder blocks:
//   PatchTokens      the patch embedding convolution's (N, C, h, w) output as h w tokens
//                    (N, h w, C) plus the embedding's bias (NCHW permuted; channels-last is
//                    already in token order); without the bias, any feature map as tokens
//                    (CoAtNet's entry into its transformer stages);
//   ClassToken       the learned class token put first, the learned position embedding added;
//   FirstTokenPool   the class token alone, (N, T, C) -> (N, C), for the head.
#pragma once

#include <optional>
#include <random>

#include "common/nn/module.h"

namespace course::nn {

class PatchTokens : public Module {
 public:
  PatchTokens(int64_t channels, Device device, bool with_bias = true);  // bias zeros

  void collect(const std::string& prefix, ModuleState& state) override;

  std::optional<Parameter> bias;  // (C,)

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  struct Saved {
    Shape input_shape;
    MemoryFormat format;
  };
  int64_t channels_;
};

class ClassToken : public Module {
 public:
  // Normal(0, 0.02) token and table, over `patches` patch tokens of `channels`.
  ClassToken(int64_t patches, int64_t channels, std::mt19937& rng, Device device);

  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter cls;        // (C,)
  Parameter positions;  // (patches + 1, C)

 protected:
  // (N, L, C) -> (N, L + 1, C) f32
  Tensor run_forward(const Tensor& patches, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  struct Saved {
    DType dtype;  // the patches', for their gradient
  };
};

class FirstTokenPool : public Module {
 protected:
  Tensor run_forward(const Tensor& tokens, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;
};

}  // namespace course::nn
