// GPU instantiations of batch normalisation (bodies in batch_norm_ops.h).
#include "common/kernels/batch_norm_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define BATCH_NORM(T)                                      \
  COURSE_INSTANTIATE_FOR_EACH(ChannelPartialSums<T>)       \
  COURSE_INSTANTIATE_FOR_EACH(BatchNormApply<T>)           \
  COURSE_INSTANTIATE_FOR_EACH(BatchNormPartialGradSums<T>) \
  COURSE_INSTANTIATE_FOR_EACH(BatchNormBackwardApply<T>)
COURSE_FLOAT_TYPES(BATCH_NORM)
COURSE_INSTANTIATE_FOR_EACH(SumOverSamples)
COURSE_INSTANTIATE_FOR_EACH(DivideBy)
COURSE_INSTANTIATE_FOR_EACH(FinishBatchStats)
COURSE_INSTANTIATE_FOR_EACH(InvStdFromVariance)
COURSE_INSTANTIATE_FOR_EACH(AccumulateParamGrads)
