// GPU instantiations of the reductions (bodies in reduce_ops.h).
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/reduce_ops.h"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define REDUCTIONS(T)                          \
  COURSE_INSTANTIATE_REDUCE(SumReducer<T>)     \
  COURSE_INSTANTIATE_REDUCE(MaxReducer<T>)     \
  COURSE_INSTANTIATE_REDUCE(ArgMaxReducer<T>)  \
  COURSE_INSTANTIATE_REDUCE(NonFiniteCount<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ArgMaxRows<T>)   \
  COURSE_INSTANTIATE_FOR_EACH(CorrectRowFlag<T>)
COURSE_FLOAT_TYPES(REDUCTIONS)
