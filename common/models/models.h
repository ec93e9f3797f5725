// The networks of the course, built from a seed (same seed, same weights, on every rank):
//   smallnet        three conv-bn-relu stages and a linear head: trains Fashion-MNIST on a
//                   2-core CPU in about a minute per epoch;
//   tinynet         smallnet a quarter as wide (15 times fewer weights): day 4's distilled
//                   student;
//   resnet18-cifar  ResNet-18 with a CIFAR stem (3x3 convolution, no max pooling), for small
//                   images;
//   resnet18, resnet50  ImageNet stem (7x7/2 convolution, 3x3/2 max pooling), as torchvision;
//   vit-...         the Vision Transformers of vit.h, for images of `image_size` (0: the
//                   preset's);
//   coatnet-...     the CoAtNets of coatnet.h, likewise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/models/coatnet/coatnet.h"
#include "common/models/model_registry.h"
#include "common/models/vit/vit.h"
#include "common/nn/model_pieces.h"
#include "common/nn/module.h"

namespace course::nn {

// Throws course::Error for a name no image family registers (model_registry.h).
ModulePtr make_model(const ModelConfig& config, Device device);

// A ViT or CoAtNet preset as the paper describes it: its own input channels, classes and
// image size (ImageNet's 3, 1,000 and 224 px for the large ones).
ModelConfig preset_model_config(const std::string& name);
// Its parameters at `config`'s channels, classes and size.
int64_t pieces_parameter_count(const ModelConfig& config);

// The model's pieces (model_pieces.h), each buildable alone: a ViT's or a CoAtNet's (throws for
// the others).
ModelPieces model_pieces(const ModelConfig& config);

// The smallest input side the model accepts (its total downsampling must leave 1 pixel; a
// Vision Transformer's one patch; CoAtNet's halvings a map of at least 1x1, even where MBConv
// halves it).
int64_t min_image_size(const std::string& name);

}  // namespace course::nn
