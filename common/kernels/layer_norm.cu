// GPU instantiations of the LayerNorm and RMSNorm kernels (bodies in layer_norm_ops.h).
#include "common/kernels/column_sums_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/layer_norm_ops.h"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define NORMALISATION(T, CENTERED)                                \
  COURSE_INSTANTIATE_FOR_EACH_ROW(NormForward<T, CENTERED>)       \
  COURSE_INSTANTIATE_FOR_EACH_ROW(NormBackwardInput<T, CENTERED>) \
  COURSE_INSTANTIATE_FOR_EACH(ChunkColumnSums<NormParamTerms<T, CENTERED>>)
#define LAYER_NORM(T) NORMALISATION(T, true)
#define RMS_NORM(T) NORMALISATION(T, false)
COURSE_FLOAT_TYPES(LAYER_NORM)
COURSE_FLOAT_TYPES(RMS_NORM)
