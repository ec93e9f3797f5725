// Dispatch of the row-broadcast kernels.
#include "common/kernels/linear.h"

#include "common/kernels/column_sums.h"
#include "common/kernels/launch.h"
#include "common/kernels/linear_ops.h"

namespace course {

namespace {

void check_row_vector(const Tensor& matrix, const Tensor& vector, const char* op) {
  COURSE_CHECK(matrix.dim() == 2 && vector.dtype() == DType::kF32 &&
                   vector.shape() == Shape{matrix.size(1)} && vector.device() == matrix.device(),
               op, ": ", matrix.str(), " with ", vector.str());
}

}  // namespace

void add_row_bias_(Tensor& y, const Tensor& bias) {
  check_row_vector(y, bias, "add_row_bias_");
  visit_floating(y.dtype(), "add_row_bias_", [&]<class T>() {
    for_each_row(y.device(), y.size(0), y.size(1),
                 ops::AddRowBias<T>{y.data_as<T>(), bias.data_as<float>(), y.size(1)});
  });
}

void add_column_sums_(const Tensor& x, Tensor& sums) {
  check_row_vector(x, sums, "add_column_sums_");
  visit_floating(x.dtype(), "add_column_sums_", [&]<class T>() {
    add_column_sums(x.device(), ops::ColumnOf<T>{x.data_as<T>(), x.size(1)}, x.size(0), x.size(1),
                    {sums.data_as<float>()});
  });
}

}  // namespace course
