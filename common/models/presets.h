// What every model family's presets share: a preset by its name (or one message that lists the
// family's names), the names a family registers, and an image preset as the labs ask for it.
#pragma once

#include <string>
#include <vector>

#include "common/core/error.h"
#include "common/models/family_spec.h"

namespace course::nn {

// Config: any struct with a `name`. `family` names the kind in the message ("GPT preset").
template <class Config>
Config find_preset(const std::vector<Config>& presets, const std::string& name,
                   const char* family) {
  std::string known;
  for (const Config& c : presets) {
    if (c.name == name) return c;
    known += (known.empty() ? "" : ", ") + c.name;
  }
  COURSE_FAIL("unknown ", family, " '", name, "' (known: ", known, ")");
}

// The presets' names, in their order (what the family registers).
template <class Config>
std::vector<std::string> preset_names(const std::vector<Config>& presets) {
  std::vector<std::string> names;
  for (const Config& c : presets) names.push_back(c.name);
  return names;
}

// Preset: an image model's (name, in_channels, classes, image: a ViT's, a CoAtNet's).
// The preset at its own input channels, classes and image size (the paper's).
template <class Preset>
ModelConfig own_model_config(const Preset& preset) {
  return {.name = preset.name,
          .in_channels = preset.in_channels,
          .num_classes = preset.classes,
          .image_size = preset.image};
}

// `preset` at the channels, classes and (when given) image size of `config`.
template <class Preset>
Preset sized_preset(Preset preset, const ModelConfig& config) {
  preset.in_channels = config.in_channels;
  preset.classes = config.num_classes;
  if (config.image_size > 0) preset.image = config.image_size;
  return preset;
}

}  // namespace course::nn
