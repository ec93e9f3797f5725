// Every model family the course trains, registered once, and the one place a --model name is
// recognised: smallnet (and its quarter-width tinynet), ResNet, GPT-2, Llama, ViT and CoAtNet.
// Each family lives in its own folder and defines its ModelFamilySpec there (family_spec.h);
// model_registry.cc lists the specs. The labs, the builders, the memory estimate and the
// throughput model ask a name's family here; what a family does not register is refused by
// name (a language model has no image network, a ResNet no pieces), and a name no family
// registers is refused with the known ones, never treated as another family's.
//
// Adding a family: a folder beside these (its presets, its network, its spec), its header's
// include and its spec's line in model_registry.cc, and its target in this package's BUILD.
#pragma once

#include <string>
#include <vector>

#include "common/models/family_spec.h"

namespace course::nn {

// The family registering `name`; throws one message listing every registered name.
const ModelFamilySpec& model_family(const std::string& name);
// Every family, in the registry's order.
const std::vector<const ModelFamilySpec*>& model_families();
// The names of the families that classify images (the image labs' --model choices).
std::vector<std::string> image_model_names();

}  // namespace course::nn
