// GPU instantiations of batch normalisation (bodies in batch_norm_ops.h; AddChunkSums is
// instantiated once, in linear.cu).
#include "common/kernels/batch_norm_ops.h"
#include "common/kernels/channel_map_ops.h"
#include "common/kernels/column_sums_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define CHANNEL_SUMS(Terms)                         \
  COURSE_INSTANTIATE_FOR_EACH_ROW(PlaneSums<Terms>) \
  COURSE_INSTANTIATE_FOR_EACH(ChunkColumnSums<PixelColumns<Terms>>)
#define BATCH_NORM(T)                                            \
  CHANNEL_SUMS(ChannelValues<T>)                                 \
  CHANNEL_SUMS(ChannelSquares<T>)                                \
  CHANNEL_SUMS(ChannelGradTerms<T>)                              \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ChannelRows<T, Normalise>)     \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ChannelRows<T, NormaliseGrad>) \
  COURSE_INSTANTIATE_FOR_EACH(ChannelPackets<T, Normalise>)      \
  COURSE_INSTANTIATE_FOR_EACH(ChannelPackets<T, NormaliseGrad>)
COURSE_FLOAT_TYPES(BATCH_NORM)
COURSE_INSTANTIATE_FOR_EACH(DivideBy)
COURSE_INSTANTIATE_FOR_EACH(FinishBatchStats)
COURSE_INSTANTIATE_FOR_EACH(InvStdFromVariance)
COURSE_INSTANTIATE_FOR_EACH(AccumulateParamGrads)
