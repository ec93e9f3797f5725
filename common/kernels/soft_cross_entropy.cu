// GPU instantiations of soft-target cross-entropy (bodies in soft_cross_entropy_ops.h).
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/soft_cross_entropy_ops.h"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define SOFT_CROSS_ENTROPY(T)                                   \
  COURSE_INSTANTIATE_FOR_EACH_ROW(SoftTargetCrossEntropyRow<T>) \
  COURSE_INSTANTIATE_FOR_EACH(SoftTargetCrossEntropyBackward<T>)
COURSE_FLOAT_TYPES(SOFT_CROSS_ENTROPY)
