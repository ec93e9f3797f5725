// GPU instantiations of the attention kernels (bodies in attention_ops.h; the softmax gradient
// is softmax.cu's).
#include "common/kernels/attention_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define ATTENTION(T)                                         \
  COURSE_INSTANTIATE_FOR_EACH_ROW(AttentionSoftmax<T>)       \
  COURSE_INSTANTIATE_FOR_EACH_ROW(AttentionProbabilities<T>) \
  COURSE_INSTANTIATE_FOR_EACH_ROW(AttentionRowDot<T>)        \
  COURSE_INSTANTIATE_FOR_EACH_ROW(MergeAttentionBlock<T>)    \
  COURSE_INSTANTIATE_FOR_EACH(AddScoreBias<T>)
COURSE_FLOAT_TYPES(ATTENTION)
