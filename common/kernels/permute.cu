// GPU instantiations of the permute kernel (body in permute_ops.h).
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/permute_ops.h"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define PERMUTE(T) COURSE_INSTANTIATE_FOR_EACH(Permute<T>)
COURSE_ALL_TYPES(PERMUTE)
