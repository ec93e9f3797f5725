// A model as the pieces it is built from, each buildable alone: its stem (before the repeated
// blocks), each block, and its head. make_coatnet assembles them; the image models' memory
// estimate (common/parallel/planning/image_memory_estimate.h) builds them one at a time, so a model
// too large to build whole on the CPU can still be measured block by block. Blocks with equal keys
// are built alike (the same shapes, only their weights differ).
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/nn/module.h"

namespace course::nn {

struct ModelPiece {
  std::string key;
  std::function<ModulePtr(std::mt19937& rng, Device device)> build;
};

struct ModelPieces {
  Shape sample;  // one input, without the batch: (C, H, W)
  ModelPiece stem;
  std::vector<ModelPiece> blocks;
  ModelPiece head;
};

// Sequential [stem, blocks (a Sequential of every block), head], built in that order from `rng`.
ModulePtr assemble(const ModelPieces& pieces, std::mt19937& rng, Device device);

// Activation checkpointing of an assembled model: each block wrapped in Checkpointed (its
// parameters keep their names).
void checkpoint_blocks(Module& assembled);

}  // namespace course::nn
