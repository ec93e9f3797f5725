// Day 3 exercises TP3.1-TP3.3 (the lab sheet is day3_data/README.md).
// solutions/day3_data/exercises.cc is the complete version; day3_data/exercises.cc is generated
// from it by tools/labgen with every exercise replaced by a stub: trainees edit that one.
#include "day3_data/exercises.h"

#include <algorithm>
#include <cmath>

#include "common/core/exercise.h"
#include "common/kernels/elementwise.h"

namespace day3 {

course::CutMixCut cutmix_cut(float lambda, int64_t height, int64_t width, std::mt19937& rng) {
  // BEGIN EXERCISE TP3.1: sqrt(1 - lambda) box at a random pixel, clipped; lambda from its area
  ::course::exercise_todo("TP3.1",
                          "sqrt(1 - lambda) box at a random pixel, clipped; lambda from its area",
                          "day3_data/README.md#tp31");
  // END EXERCISE
}

std::vector<float> mixed_targets(const std::vector<int64_t>& labels,
                                 const std::vector<float>& lambdas, int64_t classes,
                                 float smoothing) {
  // BEGIN EXERCISE TP3.2: lambda_i smooth(y_i) + (1 - lambda_i) smooth(y_{N-1-i}), row by row
  ::course::exercise_todo("TP3.2",
                          "lambda_i smooth(y_i) + (1 - lambda_i) smooth(y_{N-1-i}), row by row",
                          "day3_data/README.md#tp32");
  // END EXERCISE
}

Tensor soft_target_gradient(const course::CrossEntropyOutput& forward, const Tensor& targets,
                            float grad_loss) {
  // BEGIN EXERCISE TP3.3: (softmax - targets) times grad_loss / N
  ::course::exercise_todo("TP3.3", "(softmax - targets) times grad_loss / N",
                          "day3_data/README.md#tp33");
  // END EXERCISE
}

}  // namespace day3
