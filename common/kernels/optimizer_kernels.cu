// GPU instantiations of the optimizer updates (bodies in optimizer_ops.h).
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/optimizer_ops.h"

COURSE_INSTANTIATE_FOR_EACH(course::ops::SgdUpdate)
COURSE_INSTANTIATE_FOR_EACH(course::ops::AdamWUpdate)
