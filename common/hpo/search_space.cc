// Parsing and formatting of search spaces (see search_space.h for the text form).
#include "common/hpo/search_space.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#include "common/core/error.h"

namespace course::hpo {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

double parse_bound(const std::string& text, const std::string& context) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  COURSE_CHECK(!text.empty() && end == text.c_str() + text.size() && std::isfinite(value),
               "search space: '", text, "' is not a number in '", context, "'");
  return value;
}

ParamSpec parse_param(const std::string& text) {
  const auto equals = text.find('=');
  COURSE_CHECK(equals != std::string::npos && equals > 0,
               "search space: expected name=kind:..., got '", text, "'");
  ParamSpec param;
  param.name = text.substr(0, equals);
  const std::vector<std::string> fields = split(text.substr(equals + 1), ':');
  const std::string& kind = fields.at(0);
  if (kind == "cat") {
    COURSE_CHECK(fields.size() == 2, "search space: expected name=cat:a,b,..., got '", text, "'");
    param.kind = ParamKind::kCategorical;
    param.choices = split(fields[1], ',');
    const std::set<std::string> distinct(param.choices.begin(), param.choices.end());
    COURSE_CHECK(
        !param.choices.empty() && distinct.size() == param.choices.size() && !distinct.count(""),
        "search space: '", param.name, "' needs distinct, non-empty choices");
    param.low = 0;
    param.high = static_cast<double>(param.choices.size() - 1);
    return param;
  }
  COURSE_CHECK(kind == "float" || kind == "int", "search space: unknown kind '", kind, "' in '",
               text, "' (float, int or cat)");
  COURSE_CHECK(fields.size() == 3 || (fields.size() == 4 && fields[3] == "log"),
               "search space: expected name=", kind, ":low:high[:log], got '", text, "'");
  param.kind = kind == "int" ? ParamKind::kInt : ParamKind::kFloat;
  param.low = parse_bound(fields[1], text);
  param.high = parse_bound(fields[2], text);
  param.log = fields.size() == 4;
  COURSE_CHECK(param.low < param.high, "search space: '", param.name, "' needs low < high");
  COURSE_CHECK(!param.log || param.low > 0, "search space: log parameter '", param.name,
               "' needs low > 0");
  COURSE_CHECK(param.kind == ParamKind::kFloat ||
                   (param.low == std::round(param.low) && param.high == std::round(param.high)),
               "search space: int parameter '", param.name, "' needs integer bounds");
  return param;
}

}  // namespace

double ParamSpec::internal_low() const {
  const double widened = kind == ParamKind::kFloat ? low : low - 0.5;
  return log ? std::log(widened) : widened;
}

double ParamSpec::internal_high() const {
  const double widened = kind == ParamKind::kFloat ? high : high + 0.5;
  return log ? std::log(widened) : widened;
}

SearchSpace parse_search_space(const std::string& text) {
  SearchSpace space;
  std::set<std::string> names;
  for (const std::string& part : split(text, ';')) {
    if (part.empty()) continue;
    ParamSpec param = parse_param(part);
    COURSE_CHECK(names.insert(param.name).second, "search space: '", param.name, "' appears twice");
    space.params.push_back(std::move(param));
  }
  COURSE_CHECK(!space.params.empty(), "search space: no parameter in '", text, "'");
  return space;
}

namespace {

// The shortest text that reads back as the same double.
std::string shortest(double value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

}  // namespace

std::string to_string(const SearchSpace& space) {
  std::ostringstream out;
  for (size_t i = 0; i < space.params.size(); ++i) {
    const ParamSpec& param = space.params[i];
    out << (i ? ";" : "") << param.name << '=';
    if (param.kind == ParamKind::kCategorical) {
      out << "cat:";
      for (size_t c = 0; c < param.choices.size(); ++c) out << (c ? "," : "") << param.choices[c];
    } else {
      out << (param.kind == ParamKind::kInt ? "int:" : "float:") << shortest(param.low) << ':'
          << shortest(param.high) << (param.log ? ":log" : "");
    }
  }
  return out.str();
}

std::string format_value(const ParamSpec& param, double value) {
  switch (param.kind) {
    case ParamKind::kCategorical:
      return param.choices.at(static_cast<size_t>(value));
    case ParamKind::kInt:
      return std::to_string(static_cast<long long>(std::llround(value)));
    case ParamKind::kFloat:
      break;
  }
  std::ostringstream out;
  out.precision(6);
  out << value;
  return out.str();
}

double value_at_fraction(const ParamSpec& param, double fraction) {
  if (param.kind == ParamKind::kCategorical) {
    const double n = static_cast<double>(param.choices.size());
    return std::min(std::floor(fraction * n), n - 1);
  }
  const double lo = param.internal_low(), hi = param.internal_high();
  const double internal = lo + fraction * (hi - lo);
  const double value = param.log ? std::exp(internal) : internal;
  if (param.kind == ParamKind::kFloat) return std::clamp(value, param.low, param.high);
  return std::clamp(std::round(value), param.low, param.high);
}

}  // namespace course::hpo
