// GPU instantiations of the device-factor scalings (bodies in device_factor_ops.h).
#include "common/kernels/device_factor_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define DEVICE_FACTOR(T)                        \
  COURSE_INSTANTIATE_FOR_EACH(ScaleByFactor<T>) \
  COURSE_INSTANTIATE_FOR_EACH(UnscaleAndMark<T>)
COURSE_FLOAT_TYPES(DEVICE_FACTOR)
COURSE_INSTANTIATE_FOR_EACH(ClipFactor)
COURSE_INSTANTIATE_FOR_EACH(TrustRatio)
COURSE_INSTANTIATE_FOR_EACH(LossScaleUpdate)
