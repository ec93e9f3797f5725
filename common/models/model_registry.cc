// The registry: each family's spec listed once, looked up by a preset's name.
#include "common/models/model_registry.h"

#include "common/core/error.h"
#include "common/models/coatnet/coatnet.h"
#include "common/models/convnets/convnets.h"
#include "common/models/gpt/gpt_config.h"
#include "common/models/vit/vit.h"

namespace course::nn {

const std::vector<const ModelFamilySpec*>& model_families() {
  static const std::vector<const ModelFamilySpec*> families = {
      &small_net_family(), &resnet_family(), &gpt2_family(),
      &llama_family(),     &vit_family(),    &coatnet_family(),
  };
  return families;
}

const ModelFamilySpec& model_family(const std::string& name) {
  for (const ModelFamilySpec* family : model_families()) {
    for (const std::string& registered : family->names()) {
      if (registered == name) return *family;
    }
  }
  std::string known;
  for (const ModelFamilySpec* family : model_families()) {
    for (const std::string& registered : family->names()) {
      known += (known.empty() ? "" : ", ") + registered;
    }
  }
  COURSE_FAIL("unknown model '", name, "' (known: ", known, ")");
}

std::vector<std::string> image_model_names() {
  std::vector<std::string> names;
  for (const ModelFamilySpec* family : model_families()) {
    if (!family->traits.images) continue;
    for (std::string& name : family->names()) names.push_back(std::move(name));
  }
  return names;
}

}  // namespace course::nn
