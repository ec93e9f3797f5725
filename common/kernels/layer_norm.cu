// GPU instantiations of the LayerNorm kernels (bodies in layer_norm_ops.h).
#include "common/kernels/column_sums_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/layer_norm_ops.h"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define LAYER_NORM(T)                                        \
  COURSE_INSTANTIATE_FOR_EACH_ROW(LayerNormForward<T>)       \
  COURSE_INSTANTIATE_FOR_EACH_ROW(LayerNormBackwardInput<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ChunkColumnSums<LayerNormParamTerms<T>>)
COURSE_FLOAT_TYPES(LAYER_NORM)
