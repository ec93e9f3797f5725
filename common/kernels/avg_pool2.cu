// GPU instantiations of the 2x2 average pooling (bodies in avg_pool2_ops.h).
#include "common/kernels/avg_pool2_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define AVG_POOL2(T)                              \
  COURSE_INSTANTIATE_FOR_EACH(AvgPool2Forward<T>) \
  COURSE_INSTANTIATE_FOR_EACH(AvgPool2Backward<T>)
COURSE_FLOAT_TYPES(AVG_POOL2)
