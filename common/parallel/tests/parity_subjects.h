// The models of the sharded-versus-DDP parity tests (sharded_data_parallel_test.cc), each with
// the Sequential whose children are its sharding units, and this rank's batch of a step: a GPT
// and a Llama on random tokens, a narrow ResNet-18, vit-micro and coatnet-micro on random images.
// Every parameter count is odd, so every unit is padded on 2 and 4 ranks.
#pragma once

#include <cstdint>

#include "common/nn/module.h"
#include "common/nn/sequential.h"
#include "common/tensor/tensor.h"

namespace course::parallel::parity {

// A model, the Sequential of its blocks, and its number of classes.
struct Subject {
  nn::ModulePtr model;
  nn::Sequential* blocks;
  int64_t classes;
};

struct Batch {
  Tensor input, labels;  // labels (N,) i64
};

// GPT with 2 blocks, 3 heads of 9 channels, 61 tokens: 20,509 parameters, 9,099 per block.
Subject gpt_subject();
// A Llama of the same vocabulary and context: grouped heads, no biases, its own output layer.
Subject llama_subject();
// Two windows of random tokens for the GPT and the Llama.
Batch gpt_batch(int64_t step);

// ResNet-18 (CIFAR stem) a quarter as wide (16, 32, 64 and 128 channels: every layer kind and
// unit of the full one, a sixteenth of its 11.2M parameters), blocks = its stem, four stages
// and head; 2 images of 8 px.
Subject resnet_subject();
Batch resnet_batch(int64_t step);
// vit-micro on 8 px images of 3 channels (4 patch tokens), units = its patch embedding, class
// token, blocks, pool, norm and head.
Subject vit_subject();
Batch vit_batch(int64_t step);
// coatnet-micro on 16 px images of 3 channels (stem to 8x8, MBConv to 4x4, transformers at 4x4
// and pooled to 2x2), units = its stem, each block and the head: blocks of very unequal size.
Subject coatnet_subject();
Batch coatnet_batch(int64_t step);

}  // namespace course::parallel::parity
