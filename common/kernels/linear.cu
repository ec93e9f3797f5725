// GPU instantiations of the row-broadcast kernels (bodies in linear_ops.h).
#include "common/kernels/column_sums_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/linear_ops.h"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define LINEAR(T)                                \
  COURSE_INSTANTIATE_FOR_EACH_ROW(AddRowBias<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ChunkColumnSums<ColumnOf<T>>)
COURSE_FLOAT_TYPES(LINEAR)
COURSE_INSTANTIATE_FOR_EACH_ROW(AddChunkSums)
