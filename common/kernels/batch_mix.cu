// GPU instantiations of the batch-mixing kernels (bodies in batch_mix_ops.h).
#include "common/kernels/batch_mix_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define BATCH_MIX(T) COURSE_INSTANTIATE_FOR_EACH(MixWithFlipped<T>)
COURSE_FLOAT_TYPES(BATCH_MIX)
COURSE_INSTANTIATE_FOR_EACH(MixedSoftTargets)
