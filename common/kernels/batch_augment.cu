// GPU instantiations of the batch augmentation kernels (bodies in batch_augment_ops.h).
#include "common/kernels/batch_augment_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define BATCH_AUGMENT(T) \
  COURSE_INSTANTIATE_FOR_EACH(MeanGrey<T>) COURSE_INSTANTIATE_FOR_EACH(AugmentPixels<T>)
COURSE_FLOAT_TYPES(BATCH_AUGMENT)
