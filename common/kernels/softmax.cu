// Softmax (softmax_ops.h): its dispatch and GPU instantiations.
#include "common/kernels/launch.h"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/softmax.h"
#include "common/kernels/softmax_ops.h"
#include "common/kernels/type_lists.cuh"

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

int64_t rows_of(const Tensor& x, const char* op) {
  COURSE_CHECK(x.dim() >= 1 && x.numel() > 0 && x.memory_format() == MemoryFormat::kContiguous, op,
               " needs a contiguous non-empty (..., C) tensor, got ", x.str());
  return x.numel() / x.size(-1);
}

}  // namespace

Tensor softmax_forward(const Tensor& x) {
  const int64_t rows = rows_of(x, "softmax_forward"), cols = x.size(-1);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  visit_floating(x.dtype(), "softmax_forward", [&]<class T>() {
    for_each_row(x.device(), rows, cols,
                 ops::SoftmaxForward<T>{x.data_as<T>(), y.data_as<T>(), cols});
  });
  return y;
}

Tensor softmax_backward(const Tensor& dy, const Tensor& y) {
  check_same(dy, y, "softmax_backward");
  const int64_t rows = rows_of(y, "softmax_backward"), cols = y.size(-1);
  Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
  visit_floating(y.dtype(), "softmax_backward", [&]<class T>() {
    for_each_row(y.device(), rows, cols,
                 ops::SoftmaxBackward<T>{dy.data_as<T>(), y.data_as<T>(), dx.data_as<T>(), cols});
  });
  return dx;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define SOFTMAX(T)                                        \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::SoftmaxForward<T>) \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::SoftmaxBackward<T>)
COURSE_FLOAT_TYPES(SOFTMAX)

}  // namespace course
