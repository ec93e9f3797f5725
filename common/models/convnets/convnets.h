// The convolutional families: smallnet (three conv-bn-relu stages and a linear head; tinynet a
// quarter as wide) and the ResNets (resnet18-cifar with a CIFAR stem; resnet18 and resnet50
// with torchvision's ImageNet stem), built from their preset tables by their registrations.
#pragma once

#include "common/models/family_spec.h"

namespace course::nn {

// The registrations (model_registry.cc).
const ModelFamilySpec& small_net_family();
const ModelFamilySpec& resnet_family();

}  // namespace course::nn
