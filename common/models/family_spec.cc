// The families registered at start-up, in their positions' order (family_spec.h).
#include "common/models/family_spec.h"

#include <algorithm>
#include <utility>

#include "common/core/error.h"

namespace course::nn {

namespace {

// (position, family), sorted: constructed on first use, as registrations run during static
// initialisation in whatever order the linker put their files.
std::vector<std::pair<int, const ModelFamilySpec*>>& registrations() {
  static std::vector<std::pair<int, const ModelFamilySpec*>> families;
  return families;
}

std::vector<const ModelFamilySpec*>& listing() {
  static std::vector<const ModelFamilySpec*> families;
  return families;
}

}  // namespace

bool register_model_family(const ModelFamilySpec& family, int position) {
  auto& all = registrations();
  for (const auto& [taken, registered] : all) {
    COURSE_CHECK(registered != &family && taken != position, "the model family ",
                 family.traits.name, " registered at position ", position, ", which ",
                 registered->traits.name, " holds");
  }
  all.insert(std::upper_bound(all.begin(), all.end(), std::make_pair(position, &family),
                              [](const auto& a, const auto& b) { return a.first < b.first; }),
             {position, &family});
  listing().clear();
  for (const auto& entry : all) listing().push_back(entry.second);
  return true;
}

const std::vector<const ModelFamilySpec*>& registered_model_families() { return listing(); }

}  // namespace course::nn
