// Every model family the course trains, registered once, and the one place a --model name is
// recognised: smallnet (and its quarter-width tinynet), ResNet, GPT-2, Llama, ViT and CoAtNet.
// The labs, the memory estimate, the throughput model and the flags' refusals ask a name's
// family here and what the family is (what it reads, whether tensor parallelism cuts its blocks,
// whether it is built from pieces that pipeline stages and the measured estimate take), then
// switch over the family, refusing by name a family they have nothing for; a name no family
// registers is refused with the known ones, never treated as another family's.
#pragma once

#include <string>
#include <vector>

namespace course::nn {

enum class ModelFamily { kSmallNet, kResNet, kGpt2, kLlama, kVit, kCoatnet };

struct ModelFamilyTraits {
  const char* name;         // as the course's messages name it ("ViT")
  bool images;              // classifies images (days 1-4's image labs), else predicts tokens
  bool transformer_blocks;  // its blocks are attention + MLP, which tensor parallelism cuts
  bool in_pieces;           // built from model_pieces (pipeline stages, the measured estimate)
};

const ModelFamilyTraits& family_traits(ModelFamily family);

// The family registering `name`; throws one message listing every registered name.
ModelFamily model_family(const std::string& name);
// Every family, in the order above, and the names (presets) each registers.
const std::vector<ModelFamily>& model_families();
std::vector<std::string> family_model_names(ModelFamily family);
// The names of the families that classify images (the image labs' --model choices).
std::vector<std::string> image_model_names();

}  // namespace course::nn
