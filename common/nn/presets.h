// The look-up every model family's presets share: a preset by its name, or one message that
// lists the family's names.
#pragma once

#include <string>
#include <vector>

#include "common/core/error.h"

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

}  // namespace course::nn
