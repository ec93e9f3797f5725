// Fully connected layers' kernels (linear.h): the product with its epilogue, and the
// row-broadcast kernels (a bias added to every row, with GELU after it, and the bias's gradient as
// column sums): the bodies (one for the CPU and the GPU), their dispatch and their GPU
// instantiations.
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/column_sums.h"
#include "common/kernels/column_sums_ops.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/elementwise_ops.h"
#include "common/kernels/gemm.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/launch_plan.h"
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

// A product's bias and GELU in one pass over its (rows, cols) output, in place: the output
// becomes the pre-activation y + bias (rounded to T, as an unfused bias add leaves it) and
// `activated` GELU of that, as a separate GELU would compute it.
template <class T>
struct AddRowBiasGelu {
  T* y;
  T* activated;
  const float* bias;
  int64_t cols;
  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    T* y_row = y + row * cols;
    T* out_row = activated + row * cols;
    lanes.for_each(cols, [&](int64_t j) {
      const T pre = T(static_cast<float>(y_row[j]) + bias[j]);
      y_row[j] = pre;
      out_row[j] = T(GeluTanh::value(static_cast<float>(pre)));
    });
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

Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias, LinearEpilogue epilogue,
                      Tensor* pre_activation) {
  const bool gelu = epilogue == LinearEpilogue::kBiasGelu;
  COURSE_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && x.dtype() == w.dtype() &&
                   x.device() == w.device(),
               "linear_forward: input ", x.str(), " and weight ", w.str());
  COURSE_CHECK(!gelu || pre_activation != nullptr,
               "linear_forward with GELU returns its pre-activation too");
  Tensor y = Tensor::empty({x.size(0), w.size(0)}, x.dtype(), x.device());
  check_row_vector(y, bias, "linear_forward");
  // A LaunchLog's dry run plans the hand-written kernels only (as gemm skips the library's).
  if (x.device().is_cuda() && LaunchLog::active() == nullptr &&
      detail::cublaslt_linear_forward(x, w, bias, epilogue, y, pre_activation)) {
    return y;
  }
  gemm(x, false, w, true, y);
  if (!gelu) {
    add_row_bias_(y, bias);
    return y;
  }
  Tensor activated = Tensor::empty(y.shape(), y.dtype(), y.device());
  visit_floating(y.dtype(), "linear_forward", [&]<class T>() {
    for_each_row(y.device(), y.size(0), y.size(1),
                 ops::AddRowBiasGelu<T>{y.data_as<T>(), activated.data_as<T>(),
                                        bias.data_as<float>(), y.size(1)});
  });
  *pre_activation = y;
  return activated;
}

void add_linear_gradients(const Tensor& grad_out, const Tensor& input, Tensor& weight_grad,
                          Tensor* bias_grad) {
  if (bias_grad == nullptr) {
    add_weight_gradient(grad_out, input, weight_grad);
    return;
  }
  check_row_vector(grad_out, *bias_grad, "add_linear_gradients");
  if (grad_out.device().is_cuda() && LaunchLog::active() == nullptr) {
    Tensor bias_sums = Tensor::empty(bias_grad->shape(), DType::kF32, grad_out.device());
    if (detail::cublaslt_linear_gradients(grad_out, input, weight_grad, bias_sums)) {
      axpy_(1.0f, bias_sums, *bias_grad);
      return;
    }
  }
  add_column_sums_(grad_out, *bias_grad);
  add_weight_gradient(grad_out, input, weight_grad);
}

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

#define LINEAR(T)                                         \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::AddRowBias<T>)     \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::AddRowBiasGelu<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::ChunkColumnSums<ops::ColumnOf<T>>)
COURSE_FLOAT_TYPES(LINEAR)
COURSE_INSTANTIATE_FOR_EACH_ROW(ops::AddChunkSums)

}  // namespace course
