// GPU instantiations of the grouped q|k|v kernels (bodies in grouped_qkv_ops.h).
#include "common/kernels/grouped_qkv_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define GROUPED_QKV(T)                              \
  COURSE_INSTANTIATE_FOR_EACH(GroupedQkvForward<T>) \
  COURSE_INSTANTIATE_FOR_EACH(GroupedQkvBackward<T>)
COURSE_FLOAT_TYPES(GROUPED_QKV)
COURSE_INSTANTIATE_FOR_EACH(RotationTable)
