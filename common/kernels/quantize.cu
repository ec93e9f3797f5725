// GPU instantiations of the int8 inference kernels (bodies in quantize_ops.h).
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/quantize_ops.h"

COURSE_INSTANTIATE_FOR_EACH(course::ops::QuantizeSymmetric)
COURSE_INSTANTIATE_FOR_EACH(course::ops::SplitSigned)
COURSE_INSTANTIATE_FOR_EACH(course::ops::ScaleBiasActivation<int32_t>)
COURSE_INSTANTIATE_FOR_EACH(course::ops::ScaleBiasActivation<float>)
COURSE_INSTANTIATE_FOR_EACH(course::ops::Im2colNhwc)
