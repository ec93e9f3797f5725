// Launching the two passes of a deterministic column reduction (column_sums_ops.h).
#pragma once

#include <array>

#include "common/kernels/column_sums_ops.h"
#include "common/kernels/launch.h"
#include "common/tensor/tensor.h"

namespace course {

// outs[s][col] += the sum over rows of Column's s-th summand, for a (rows, cols) matrix on
// `device`.
template <class Column>
void add_column_sums(Device device, const Column& column, int64_t rows, int64_t cols,
                     const std::array<float*, Column::kSums>& outs) {
  static_assert(Column::kSums <= ops::kMaxColumnSums);
  if (rows <= 0 || cols <= 0) return;
  const int64_t chunks = ops::row_chunks(rows);
  Tensor partial = Tensor::empty({chunks * Column::kSums * cols}, DType::kF32, device);
  for_each_index(device, chunks * cols,
                 ops::ChunkColumnSums<Column>{column, rows, cols, partial.data_as<float>()},
                 ops::kRowsPerChunk);
  ops::AddChunkSums finish{partial.data_as<float>(), {}, Column::kSums, chunks, cols};
  for (int s = 0; s < Column::kSums; ++s) finish.out[s] = outs[s];
  for_each_index(device, cols, finish, chunks * Column::kSums);
}

}  // namespace course
