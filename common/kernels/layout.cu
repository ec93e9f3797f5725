// GPU instantiations of the memory-format conversions (bodies in layout_ops.h).
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/layout_ops.h"
#include "common/kernels/type_lists.cuh"

COURSE_INSTANTIATE_FOR_EACH(course::ops::Relayout<uint8_t>)
COURSE_INSTANTIATE_FOR_EACH(course::ops::Relayout<uint16_t>)
COURSE_INSTANTIATE_FOR_EACH(course::ops::Relayout<uint32_t>)
COURSE_INSTANTIATE_FOR_EACH(course::ops::Relayout<uint64_t>)
#define ACCUMULATE_RELAID(T) COURSE_INSTANTIATE_FOR_EACH(course::ops::AccumulateRelaid<T>)
COURSE_FLOAT_TYPES(ACCUMULATE_RELAID)
