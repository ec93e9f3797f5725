// The row-broadcast kernels of fully connected layers (a bias added to every row, and its
// gradient as column sums): the bodies (one for the CPU and the GPU), their dispatch and their
// GPU instantiations.
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/column_sums.h"
#include "common/kernels/column_sums_ops.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/linear.h"
#include "common/kernels/row_lanes.h"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/type_lists.cuh"

namespace course::ops {

// y[i, j] += bias[j] over a contiguous (rows, cols) matrix; bias is f32. A row kernel
// (row_lanes.h), so that the column is the loop's index, not a remainder per element: the CPU's
// loop over a row vectorises, and a warp's lanes read neighbouring elements.
template <class T>
struct AddRowBias {
  T* y;
  const float* bias;
  int64_t cols;
  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    T* y_row = y + row * cols;
    lanes.for_each(cols, [&](int64_t j) { y_row[j] = T(static_cast<float>(y_row[j]) + bias[j]); });
  }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

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

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define LINEAR(T)                                     \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::AddRowBias<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::ChunkColumnSums<ops::ColumnOf<T>>)
COURSE_FLOAT_TYPES(LINEAR)
COURSE_INSTANTIATE_FOR_EACH_ROW(ops::AddChunkSums)

}  // namespace course
