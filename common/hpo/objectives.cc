// The synthetic objectives (see objectives.h).
#include "common/hpo/objectives.h"

#include "common/core/error.h"

namespace course::hpo {

double rosenbrock(double x, double y) {
  return (1 - x) * (1 - x) + 100 * (y - x * x) * (y - x * x);
}

double himmelblau(double x, double y) {
  const double a = x * x + y - 11, b = x + y * y - 7;
  return a * a + b * b;
}

std::string synthetic_space(const std::string& function) {
  if (function == "rosenbrock") return "x=float:-2:2;y=float:-2:2";
  if (function == "himmelblau") return "x=float:-5:5;y=float:-5:5";
  COURSE_FAIL("unknown function '", function, "' (rosenbrock or himmelblau)");
}

double synthetic_objective(const std::string& function, double x, double y) {
  if (function == "rosenbrock") return rosenbrock(x, y);
  if (function == "himmelblau") return himmelblau(x, y);
  COURSE_FAIL("unknown function '", function, "' (rosenbrock or himmelblau)");
}

}  // namespace course::hpo
