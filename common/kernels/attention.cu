// GPU instantiations of the attention kernels (bodies in attention_ops.h).
#include "common/kernels/attention_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define ATTENTION(T)                                     \
  COURSE_INSTANTIATE_FOR_EACH(AttentionForward<T>)       \
  COURSE_INSTANTIATE_FOR_EACH(AttentionBackwardQuery<T>) \
  COURSE_INSTANTIATE_FOR_EACH(AttentionBackwardKey<T>)
COURSE_FLOAT_TYPES(ATTENTION)
