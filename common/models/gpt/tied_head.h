// A language model's output layer with its weight tied to the token embedding (GPT-2):
// logits (..., V) = h (..., C) wte^T. Its weight gradient adds into the embedding's, whose
// layer reports the gradient ready once both parts are in (the embedding's backward runs
// last), so this layer holds no parameter of its own.
#pragma once

#include "common/nn/module.h"

namespace course::nn {

class TiedHead : public Module {
 public:
  explicit TiedHead(Parameter& embedding);  // (V, C), owned by the embedding layer

 protected:
  Tensor run_forward(const Tensor& h, Context& ctx) override;
  Tensor run_backward(const Tensor& dlogits, Context& ctx) override;
  std::vector<Parameter*> borrowed_parameters() override { return {&weight_}; }

 private:
  // The weight is not saved: backward reads the parameter again, so sharded data parallelism
  // can free the gathered weight between forward and backward (it gathers it again).
  struct Saved {
    Tensor rows;  // h as (rows, C) in the compute dtype
    Shape input_shape;
    Tensor weight;  // forward's cast of the table where kept (Module::kept_for_backward)
  };
  Parameter& weight_;
};

}  // namespace course::nn
