// A model assembled from pieces (model_pieces.h: Sequential [stem, blocks, head]) as a staged
// model: its stem the first part, its blocks, its head the last part. The image models (ViT,
// CoAtNet) are cut into pipeline stages through this.
//
// Unlike a GPT's, the activations between CoAtNet's blocks change shape (maps halving, channels
// growing, maps becoming tokens) and so do the blocks' costs. Both are read from one forward of
// a single sample through the whole model at construction, in evaluation mode (no batch-norm
// statistics moved): the shapes (and memory formats) a receiving stage allocates, and each
// part's multiply-adds (its parameters applied at each position of its output, plus its
// attention layers' score and value products over its tokens).
#pragma once

#include <memory>
#include <vector>

#include "common/nn/staged_model.h"

namespace course::nn {

// One image's multiply-adds in the forward of `part`, whose output on a batch is `y`: each
// weight once per position of the output (a map's H x W, a sequence's T, one for a vector), and
// for each attention layer over tokens (B, T, C) T^2 C for the scores and again for the values.
double part_multiply_adds(Module& part, const Tensor& y);

class PieceStages : public StagedModel {
 public:
  // `model` as assemble() builds it; `sample` one input (1, C, H, W) in the memory format the
  // run feeds.
  PieceStages(Module& model, const Tensor& sample);

  int64_t blocks() override { return static_cast<int64_t>(blocks_.size()); }
  std::unique_ptr<Module> stage(const StageBounds& bounds) override;
  PartCosts parameters(int stages) override;
  PartCosts multiply_adds() override { return multiply_adds_; }
  Tensor empty_activation(int64_t block, const Tensor& input) override;

 private:
  // What the sample's forward showed of one activation between parts.
  struct Activation {
    Shape shape;  // without the batch
    MemoryFormat format;
  };

  Module::Child stem_, head_;
  std::vector<Module::Child> blocks_;  // named "blocks.<i>"
  std::vector<Activation> entering_;   // entering block b; the last one entering the head
  PartCosts multiply_adds_;
};

}  // namespace course::nn
