// The registry: the families' specs listed once, looked up by family or by a preset's name.
#include "common/nn/model_registry.h"

#include "common/core/error.h"

namespace course::nn {

namespace {

// The registered specs, in ModelFamily's order (checked once).
const std::vector<const ModelFamilySpec*>& registered_specs() {
  static const std::vector<const ModelFamilySpec*> specs = [] {
    std::vector<const ModelFamilySpec*> list = {&small_net_family(), &resnet_family(),
                                                &gpt2_family(),      &llama_family(),
                                                &vit_family(),       &coatnet_family()};
    for (size_t i = 0; i < list.size(); ++i) {
      COURSE_CHECK(static_cast<size_t>(list[i]->family) == i, "the model registry lists ",
                   list[i]->traits.name, " at place ", i, ", not at its family's");
    }
    return list;
  }();
  return specs;
}

}  // namespace

const ModelFamilySpec& family_spec(ModelFamily family) {
  const auto& specs = registered_specs();
  const auto index = static_cast<size_t>(family);
  COURSE_CHECK(index < specs.size(), "model family ", index, " is not registered");
  return *specs[index];
}

const ModelFamilyTraits& family_traits(ModelFamily family) { return family_spec(family).traits; }

const std::vector<ModelFamily>& model_families() {
  static const std::vector<ModelFamily> families = [] {
    std::vector<ModelFamily> list;
    for (const ModelFamilySpec* spec : registered_specs()) list.push_back(spec->family);
    return list;
  }();
  return families;
}

std::vector<std::string> family_model_names(ModelFamily family) {
  return family_spec(family).names();
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
