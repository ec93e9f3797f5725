// A hyper-parameter search space: named float (linear or log), int and categorical parameters.
//
// Every value is held as one double in the sampler's "internal" form: a float or an int as
// itself, a categorical as the index of its choice. The text form is what the HPO tool's
// --space flag and the study's database store, one parameter per ';':
//   lr=float:1e-4:1:log;batch=int:32:256:log;momentum=float:0.8:0.99;opt=cat:sgd,adamw
#pragma once

#include <string>
#include <vector>

namespace course::hpo {

enum class ParamKind { kFloat, kInt, kCategorical };

struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::kFloat;
  double low = 0.0;  // float and int: inclusive bounds
  double high = 1.0;
  bool log = false;                  // sampled uniformly in log(value)
  std::vector<std::string> choices;  // categorical only

  // The bounds the samplers work in: log for log parameters, each int widened by half a step
  // (so every integer owns an interval of width 1).
  double internal_low() const;
  double internal_high() const;
};

struct SearchSpace {
  std::vector<ParamSpec> params;
};

// One value per parameter of a space, in its internal form.
using ParamValues = std::vector<double>;

// Parses the text form; a malformed spec is one course::Error naming the offending part.
SearchSpace parse_search_space(const std::string& text);
std::string to_string(const SearchSpace& space);

// "0.0123", "64", "adamw": how a value is shown and passed on as a flag.
std::string format_value(const ParamSpec& param, double value);

// Maps a point of [0, 1] to the parameter's range (uniform in log space for log parameters,
// rounded for ints, an index for categoricals): the random and grid samplers' one mapping.
double value_at_fraction(const ParamSpec& param, double fraction);

}  // namespace course::hpo
