// GPU instantiations of the relative position bias (bodies in relative_position_ops.h).
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/relative_position_ops.h"

using namespace course::ops;

COURSE_INSTANTIATE_FOR_EACH(RelativeBiasGather)
COURSE_INSTANTIATE_FOR_EACH(RelativeBiasScatter)
