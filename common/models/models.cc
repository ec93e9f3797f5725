// Building an image model by its family's registration (model_registry.h).
#include "common/models/models.h"

#include <random>

#include "common/models/model_registry.h"

namespace course::nn {

namespace {

// The registered families whose spec passes `has` ("ViT, CoAtNet"), for messages.
template <class Has>
std::string families_that(Has has) {
  std::string names;
  for (const ModelFamilySpec* spec : model_families()) {
    if (has(*spec)) names += (names.empty() ? "" : ", ") + std::string(spec->traits.name);
  }
  return names;
}

// The spec of `name`'s family, which must be built in pieces.
const ModelFamilySpec& spec_in_pieces(const std::string& name) {
  const ModelFamilySpec& spec = model_family(name);
  COURSE_CHECK(spec.pieces != nullptr, "the models in pieces are the ",
               families_that([](const ModelFamilySpec& s) { return s.pieces != nullptr; }),
               " families, not ", spec.traits.name, "'s ", name);
  return spec;
}

}  // namespace

ModulePtr make_model(const ModelConfig& config, Device device) {
  COURSE_CHECK(config.in_channels > 0 && config.num_classes > 0, "a model needs input channels ",
               "and classes, got ", config.in_channels, " and ", config.num_classes);
  COURSE_CHECK(config.resnet_width > 0, "a ResNet's width must be positive, got ",
               config.resnet_width);
  const ModelFamilySpec& spec = model_family(config.name);
  if (spec.pieces != nullptr) {
    std::mt19937 rng(config.seed);
    return assemble(spec.pieces(config), rng, device);
  }
  COURSE_CHECK(spec.build != nullptr, config.name, " is a ", spec.traits.name,
               " language model, which reads tokens; the image families are ",
               families_that([](const ModelFamilySpec& s) { return s.traits.images; }));
  return spec.build(config, device);
}

ModelConfig preset_model_config(const std::string& name) {
  return spec_in_pieces(name).own_config(name);
}

int64_t pieces_parameter_count(const ModelConfig& config) {
  return spec_in_pieces(config.name).parameter_count(config);
}

ModelPieces model_pieces(const ModelConfig& config) {
  return spec_in_pieces(config.name).pieces(config);
}

int64_t min_image_size(const std::string& name) {
  const ModelFamilySpec& spec = model_family(name);
  COURSE_CHECK(spec.min_image_size != nullptr, name, " reads tokens, not images");
  return spec.min_image_size(name);
}

}  // namespace course::nn
