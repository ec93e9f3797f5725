// GPU instantiations of the 1-bit compression kernels (bodies in sign_compression_ops.h).
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/sign_compression_ops.h"

COURSE_INSTANTIATE_FOR_EACH_ROW(course::ops::PieceMagnitudes)
COURSE_INSTANTIATE_FOR_EACH_ROW(course::ops::ChunkScales)
COURSE_INSTANTIATE_FOR_EACH(course::ops::SignBytes)
COURSE_INSTANTIATE_FOR_EACH(course::ops::AverageSigns)
COURSE_INSTANTIATE_FOR_EACH(course::ops::ExpandSigns)
