// GPU instantiations of softmax cross-entropy (bodies in cross_entropy_ops.h).
#include "common/kernels/cross_entropy_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define CROSS_ENTROPY(T)                                     \
  COURSE_INSTANTIATE_FOR_EACH_ROW(SoftmaxCrossEntropyRow<T>) \
  COURSE_INSTANTIATE_FOR_EACH(CrossEntropyBackward<T>)
COURSE_FLOAT_TYPES(CROSS_ENTROPY)
COURSE_INSTANTIATE_FOR_EACH_ROW(MeanOfRow)
COURSE_INSTANTIATE_REDUCE(LabelsOutOfRange)
