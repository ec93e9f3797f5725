// A flag's choices from an enum: each kind with the name its `name` function gives, in order
// (what train::add_choice takes; the enum's names stay in its one name function).
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace course {

template <class Kind>
std::vector<std::pair<std::string, Kind>> named_choices(std::initializer_list<Kind> kinds,
                                                        const char* (*name)(Kind)) {
  std::vector<std::pair<std::string, Kind>> choices;
  for (Kind kind : kinds) choices.emplace_back(name(kind), kind);
  return choices;
}

}  // namespace course
