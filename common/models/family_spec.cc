// The families registered at start-up, in their positions' order (family_spec.h).
#include "common/models/family_spec.h"

#include <map>

#include "common/core/error.h"

namespace course::nn {

namespace {

// Each family by its position: constructed on first use, as registrations run during static
// initialisation in whatever order the linker put their files.
std::map<int, const ModelFamilySpec*>& registrations() {
  static std::map<int, const ModelFamilySpec*> families;
  return families;
}

}  // namespace

bool register_model_family(const ModelFamilySpec& family, int position) {
  std::map<int, const ModelFamilySpec*>& all = registrations();
  for (const auto& [taken, registered] : all) {
    COURSE_CHECK(registered != &family, "the model family ", family.traits.name,
                 " is registered twice, at positions ", taken, " and ", position);
  }
  const auto held = all.find(position);
  COURSE_CHECK(held == all.end(), "the model family ", family.traits.name,
               " registered at position ", position, ", which ",
               held == all.end() ? "" : held->second->traits.name, " holds");
  all[position] = &family;
  return true;
}

std::vector<const ModelFamilySpec*> model_families() {
  std::vector<const ModelFamilySpec*> families;
  for (const auto& entry : registrations()) families.push_back(entry.second);
  return families;
}

}  // namespace course::nn
