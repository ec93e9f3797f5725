// A model assembled from its pieces.
#include "common/nn/model_pieces.h"

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

}  // namespace course::nn
