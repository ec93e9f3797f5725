// GPU instantiations of pooling (bodies in pooling_ops.h).
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/pooling_ops.h"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define POOLING(T)                                            \
  COURSE_INSTANTIATE_FOR_EACH(MaxPoolForward<T>)              \
  COURSE_INSTANTIATE_FOR_EACH(MaxPoolForwardChannelsLast<T>)  \
  COURSE_INSTANTIATE_FOR_EACH(MaxPoolBackward<T>)             \
  COURSE_INSTANTIATE_FOR_EACH(MaxPoolBackwardChannelsLast<T>) \
  COURSE_INSTANTIATE_FOR_EACH(GlobalAvgPoolForward<T>)        \
  COURSE_INSTANTIATE_FOR_EACH(GlobalAvgPoolBackward<T>)
COURSE_FLOAT_TYPES(POOLING)
COURSE_INSTANTIATE_FOR_EACH(MaxPoolForward<int8_t>)
COURSE_INSTANTIATE_FOR_EACH(MaxPoolForwardChannelsLast<int8_t>)
