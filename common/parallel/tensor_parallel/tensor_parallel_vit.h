// A Vision Transformer as assembled from its pieces (Sequential [stem, blocks, head]:
// common/models/vit/vit.h) with every transformer block cut over the tensor-parallel ranks
// (tensor_parallel_block.h: heads and MLP split, one all-reduce each way). The stem (patch
// embedding, class token, positions) and the head are the whole model's own modules, replicated:
// what enters them, and the gradient that leaves the first block, are the same on every rank, so
// every rank trains them as one process does. Its children carry the whole model's names, so it is
// cut into pipeline stages as the whole one is (common/nn/piece_stages.h: 2D and 3D parallelism
// of the ViT). The activations between blocks stay whole on every rank: a ViT's 50 or 197 tokens
// (patches and the class token) rarely split into equal sequence slices.
#pragma once

#include <memory>
#include <vector>

#include "common/nn/module.h"
#include "common/nn/sequential.h"
#include "common/parallel/tensor_parallel/tensor_parallel_block.h"

namespace course::parallel {

class TensorParallelVit : public nn::Module {
 public:
  // Every rank passes a `whole` model built from the same seed. Throws when a block is not a
  // transformer block (CoAtNet's convolution and relative-attention stages) or its heads or MLP
  // width do not split over the ranks.
  TensorParallelVit(nn::Module& whole, std::shared_ptr<Communicator> tp);

  std::vector<Child> children() override;
  // Collective over the tensor-parallel ranks: the whole model's blocks receive every rank's
  // slices (its stem and head are this model's own).
  void gather_into_whole();
  // The parameters every rank holds whole (the stem, the head, the blocks' normalisations and
  // row-parallel biases), with equal gradients on every rank: the rest is cut.
  std::vector<nn::Parameter*> replicated_parameters();

 protected:
  // images (B, C, H, W) -> logits (B, classes), the same on every rank.
  Tensor run_forward(const Tensor& images, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dlogits, nn::Context& ctx) override;

 private:
  nn::Module& stem_;
  nn::Sequential blocks_;
  nn::Module& head_;
  std::vector<nn::GptBlockLayers> whole_blocks_;
  std::vector<TensorParallelBlock*> cut_blocks_;
};

}  // namespace course::parallel
