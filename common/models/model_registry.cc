// The registry: the registered families, looked up by a preset's name.
#include "common/models/model_registry.h"

#include "common/core/error.h"

namespace course::nn {

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
