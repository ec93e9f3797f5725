// The one place a --model name is recognised, among the model families a program links:
// smallnet (and its quarter-width tinynet), ResNet, ViT and CoAtNet with this library (the image
// labs' families), GPT-2 and Llama with //common/models/gpt (the language labs'). Each family
// lives in its own folder, defines its ModelFamilySpec there and registers it (family_spec.h).
// The labs, the builders, the memory estimate and the throughput model ask a name's family here;
// what a family does not register is refused by name (a language model has no image network, a
// ResNet no pieces), and a name no linked family registers is refused with the known ones, never
// treated as another family's.
//
// Adding a family: a folder beside these (its presets, its network, its spec and its one
// register_model_family line), its library `alwayslink`, and a dependency on it from the
// programs that train it (this library's, for an image family).
#pragma once

#include <string>
#include <vector>

#include "common/models/family_spec.h"

namespace course::nn {

// The family registering `name`; throws one message listing every registered name.
const ModelFamilySpec& model_family(const std::string& name);
// The names of the families that classify images (the image labs' --model choices).
std::vector<std::string> image_model_names();

}  // namespace course::nn
