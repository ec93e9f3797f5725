// GPU instantiations of the per-channel operations (bodies in channel_scale_ops.h).
#include "common/kernels/channel_scale_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define CHANNEL_SCALE(T)                       \
  COURSE_INSTANTIATE_FOR_EACH(ChannelScale<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ChannelBias<T>)  \
  COURSE_INSTANTIATE_FOR_EACH(PlaneDot<T>)
COURSE_FLOAT_TYPES(CHANNEL_SCALE)
