// Synthetic objectives for studies that take seconds: the course's Rosenbrock and Himmelblau
// functions of (x, y), and their search spaces.
#pragma once

#include <string>

namespace course::hpo {

// (1 - x)^2 + 100 (y - x^2)^2: one minimum 0 at (1, 1) at the bottom of a curved valley.
double rosenbrock(double x, double y);
// (x^2 + y - 11)^2 + (x + y^2 - 7)^2: four minima of 0, one at (3, 2).
double himmelblau(double x, double y);

// The spaces both are searched on: x and y in [-5, 5] for Himmelblau, [-2, 2] for Rosenbrock.
std::string synthetic_space(const std::string& function);
// rosenbrock or himmelblau by name; anything else is one course::Error.
double synthetic_objective(const std::string& function, double x, double y);

}  // namespace course::hpo
