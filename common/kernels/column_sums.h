// Launching the passes of a deterministic column reduction (column_sums_ops.h).
#pragma once

#include <array>
#include <utility>

#include "common/kernels/column_sums_ops.h"
#include "common/kernels/launch.h"
#include "common/tensor/tensor.h"

namespace course {

// partial (chunks, kSums, cols) = Column's sums over each chunk of `rows_per_chunk` rows of a
// (rows, cols) matrix on `device` (the first pass).
template <class Column>
void chunk_column_sums(Device device, const Column& column, int64_t rows, int64_t cols,
                       int64_t rows_per_chunk, float* partial) {
  const int64_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  if (runs_on_host(device)) {
    for_each_host_index(
        chunks, ops::ChunkColumnSumsByRow<Column>{column, rows, cols, rows_per_chunk, partial},
        rows_per_chunk * cols);
    return;
  }
  for_each_index(device, chunks * cols,
                 ops::ChunkColumnSums<Column>{column, rows, cols, rows_per_chunk, partial},
                 rows_per_chunk);
}

// outs[s][col] += the sum over chunks of partial[chunk][s][col] (the second pass); without
// `accumulate`, = (a buffer the sums overwrite needs no zero fill first).
template <int kSums>
void add_chunk_sums(Device device, const float* partial, int64_t chunks, int64_t cols,
                    const std::array<float*, kSums>& outs, bool accumulate = true) {
  static_assert(kSums <= ops::kMaxColumnSums);
  ops::AddChunkSums finish{partial, {}, kSums, chunks, cols, accumulate};
  for (int s = 0; s < kSums; ++s) finish.out[s] = outs[s];
  for_each_row(device, kSums * cols, chunks, finish);
}

// outs[s][col] += the sum over rows of Column's s-th summand, for a (rows, cols) matrix on
// `device`: sums over chunks of kRowsPerChunk rows, then, while more than kMaxFinishedChunks
// chunks are left, sums of kPartialsPerChunk of their partials (a tall matrix, such as the
// pixels of an NHWC batch with its 64 channels as columns, would otherwise leave each finishing
// warp thousands of partials to add), then the finishing pass.
// Without `accumulate`, outs[s][col] = the sum (rows > 0).
template <class Column>
void add_column_sums(Device device, const Column& column, int64_t rows, int64_t cols,
                     const std::array<float*, Column::kSums>& outs, bool accumulate = true) {
  if (cols <= 0) return;
  if (rows <= 0) {
    COURSE_CHECK(accumulate, "column sums of no rows cannot be written over their outputs");
    return;
  }
  const int64_t width = Column::kSums * cols;  // a partial-sum matrix's row: (sum, column)
  int64_t chunks = (rows + ops::kRowsPerChunk - 1) / ops::kRowsPerChunk;
  Tensor partial = Tensor::empty({chunks * width}, DType::kF32, device);
  chunk_column_sums(device, column, rows, cols, ops::kRowsPerChunk, partial.data_as<float>());
  while (chunks > ops::kMaxFinishedChunks) {
    const int64_t fewer = (chunks + ops::kPartialsPerChunk - 1) / ops::kPartialsPerChunk;
    Tensor sums = Tensor::empty({fewer * width}, DType::kF32, device);
    chunk_column_sums(device, ops::ColumnOf<float>{partial.data_as<float>(), width}, chunks, width,
                      ops::kPartialsPerChunk, sums.data_as<float>());
    partial = std::move(sums);
    chunks = fewer;
  }
  add_chunk_sums<Column::kSums>(device, partial.data_as<float>(), chunks, cols, outs, accumulate);
}

}  // namespace course
