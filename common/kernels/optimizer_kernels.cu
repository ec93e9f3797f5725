// GPU instantiations of the fused optimizer updates (bodies in optimizer_ops.h).
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/optimizer_ops.h"

using namespace course::ops;

COURSE_INSTANTIATE_FOR_EACH(MultiTensorApply<SgdUpdate::kSlots, SgdUpdate>)
COURSE_INSTANTIATE_FOR_EACH(MultiTensorApply<AdamWUpdate::kSlots, AdamWUpdate>)
COURSE_INSTANTIATE_FOR_EACH(MultiTensorApply<LionUpdate::kSlots, LionUpdate>)
COURSE_INSTANTIATE_FOR_EACH(MultiTensorApply<MomentumUpdate::kSlots, MomentumUpdate>)
COURSE_INSTANTIATE_FOR_EACH(MultiTensorApply<FrozenVarianceUpdate::kSlots, FrozenVarianceUpdate>)
COURSE_INSTANTIATE_FOR_EACH(MultiTensorApply<LarsUpdate::kSlots, LarsUpdate>)
COURSE_INSTANTIATE_FOR_EACH(MultiTensorApply<LambDirection::kSlots, LambDirection>)
COURSE_INSTANTIATE_FOR_EACH(MultiTensorApply<TrustStep::kSlots, TrustStep>)
COURSE_INSTANTIATE_FOR_EACH_ROW(ChunkSquares)
COURSE_INSTANTIATE_FOR_EACH(SumChunks)
