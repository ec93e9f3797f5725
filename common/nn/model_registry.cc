// The model families' registrations: each family's traits and the presets it names.
#include "common/nn/model_registry.h"

#include "common/core/error.h"
#include "common/nn/coatnet.h"
#include "common/nn/gpt_config.h"
#include "common/nn/vit.h"

namespace course::nn {

namespace {

std::vector<std::string> decoder_names(DecoderFamily family) {
  std::vector<std::string> names;
  for (const GptConfig& config : gpt_presets()) {
    if (config.family == family) names.push_back(config.name);
  }
  return names;
}

}  // namespace

const ModelFamilyTraits& family_traits(ModelFamily family) {
  static const ModelFamilyTraits small_net{"smallnet", true, false, false},
      resnet{"ResNet", true, false, false}, gpt2{"GPT-2", false, true, false},
      llama{"Llama", false, true, false}, vit{"ViT", true, true, true},
      coatnet{"CoAtNet", true, false, true};
  switch (family) {
    case ModelFamily::kSmallNet:
      return small_net;
    case ModelFamily::kResNet:
      return resnet;
    case ModelFamily::kGpt2:
      return gpt2;
    case ModelFamily::kLlama:
      return llama;
    case ModelFamily::kVit:
      return vit;
    case ModelFamily::kCoatnet:
      return coatnet;
  }
  COURSE_FAIL("model family ", static_cast<int>(family), " is not registered");
}

const std::vector<ModelFamily>& model_families() {
  static const std::vector<ModelFamily> families = {ModelFamily::kSmallNet, ModelFamily::kResNet,
                                                    ModelFamily::kGpt2,     ModelFamily::kLlama,
                                                    ModelFamily::kVit,      ModelFamily::kCoatnet};
  return families;
}

std::vector<std::string> family_model_names(ModelFamily family) {
  switch (family) {
    case ModelFamily::kSmallNet:
      return {"smallnet", "tinynet"};
    case ModelFamily::kResNet:
      return {"resnet18-cifar", "resnet18", "resnet50"};
    case ModelFamily::kGpt2:
      return decoder_names(DecoderFamily::kGpt2);
    case ModelFamily::kLlama:
      return decoder_names(DecoderFamily::kLlama);
    case ModelFamily::kVit: {
      std::vector<std::string> names;
      for (const VitConfig& config : vit_presets()) names.push_back(config.name);
      return names;
    }
    case ModelFamily::kCoatnet: {
      std::vector<std::string> names;
      for (const CoatnetConfig& config : coatnet_presets()) names.push_back(config.name);
      return names;
    }
  }
  COURSE_FAIL("model family ", static_cast<int>(family), " is not registered");
}

ModelFamily model_family(const std::string& name) {
  for (ModelFamily family : model_families()) {
    for (const std::string& registered : family_model_names(family)) {
      if (registered == name) return family;
    }
  }
  std::string known;
  for (ModelFamily family : model_families()) {
    for (const std::string& registered : family_model_names(family)) {
      known += (known.empty() ? "" : ", ") + registered;
    }
  }
  COURSE_FAIL("unknown model '", name, "' (known: ", known, ")");
}

std::vector<std::string> image_model_names() {
  std::vector<std::string> names;
  for (ModelFamily family : model_families()) {
    if (!family_traits(family).images) continue;
    for (std::string& name : family_model_names(family)) names.push_back(std::move(name));
  }
  return names;
}

}  // namespace course::nn
