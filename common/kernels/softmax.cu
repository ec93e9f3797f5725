// GPU instantiations of the softmax kernels (bodies in softmax_ops.h).
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/softmax_ops.h"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define SOFTMAX(T)                                   \
  COURSE_INSTANTIATE_FOR_EACH_ROW(SoftmaxForward<T>) \
  COURSE_INSTANTIATE_FOR_EACH_ROW(SoftmaxBackward<T>)
COURSE_FLOAT_TYPES(SOFTMAX)
