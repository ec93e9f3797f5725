// A model assembled from its pieces.
#include "common/nn/model_pieces.h"

#include "common/nn/checkpointed.h"
#include "common/nn/sequential.h"

namespace course::nn {

ModulePtr assemble(const ModelPieces& pieces, std::mt19937& rng, Device device) {
  auto net = std::make_unique<Sequential>();
  net->add(pieces.stem.build(rng, device), "stem");
  auto blocks = std::make_unique<Sequential>();
  for (const ModelPiece& block : pieces.blocks) blocks->add(block.build(rng, device));
  net->add(std::move(blocks), "blocks");
  net->add(pieces.head.build(rng, device), "head");
  return net;
}

void checkpoint_blocks(Module& assembled) {
  auto* blocks = dynamic_cast<Sequential*>(&assembled.child("blocks"));
  COURSE_CHECK(blocks != nullptr,
               "activation checkpointing wraps the blocks of a model assembled "
               "from its pieces (stem, blocks, head)");
  blocks->wrap_children(
      [](ModulePtr block) { return std::make_unique<Checkpointed>(std::move(block)); });
}

}  // namespace course::nn
