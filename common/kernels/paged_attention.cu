// GPU instantiations of the paged-attention kernels (bodies in paged_attention_ops.h).
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/paged_attention_ops.h"

using namespace course::ops;

COURSE_INSTANTIATE_FOR_EACH(EmbedAtPositions)
COURSE_INSTANTIATE_FOR_EACH(AppendToCache)
COURSE_INSTANTIATE_FOR_EACH(CachedAttention)
