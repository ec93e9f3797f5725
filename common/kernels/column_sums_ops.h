// Deterministic column sums of a (rows, cols) matrix in two passes, so a GPU has enough threads
// for them (one thread per column would leave most of its SMs idle: 768 columns are 3 blocks):
//   1. ChunkColumnSums: index i = (chunk, column) sums the column over its chunk of
//      rows_per_chunk rows (kRowsPerChunk unless a caller's chunks mean something, as batch
//      norm's samples do) into partial[chunk][s][column] (coalesced: neighbouring threads read
//      neighbouring columns of the same row); on the CPU, ChunkColumnSumsByRow makes the same
//      additions in storage order;
//   2. AddChunkSums: a row kernel (row_lanes.h) per (sum, column) adds the chunks' partials to
//      the outputs, a warp's lanes sharing the chunks (enough warps for 2048 columns of 256
//      chunks, where a thread per column would leave the GPU idle).
// The result does not depend on the number of threads or the device. `Column` gives the
// summands: COURSE_HD void add(int64_t row, int64_t col, float* acc) const adds to its kSums
// running sums (a bias gradient: 1; LayerNorm's weight and bias gradients: 2).
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/row_lanes.h"

namespace course::ops {

inline constexpr int64_t kRowsPerChunk = 64;
inline constexpr int kMaxColumnSums = 2;
// The later passes over the partial sums of a tall matrix (column_sums.h's add_column_sums):
// chunks of 16 partials, until at most 64 are left for the finishing warps.
inline constexpr int64_t kPartialsPerChunk = 16;
inline constexpr int64_t kMaxFinishedChunks = 64;

// The summands of a bias gradient, and of the later passes over partial sums: a dense row-major
// (rows, cols) matrix's elements, per column, added up in f32.
template <class T>
struct ColumnOf {
  static constexpr int kSums = 1;
  const T* x;
  int64_t cols;
  COURSE_HD void add(int64_t row, int64_t col, float* acc) const {
    acc[0] += static_cast<float>(x[row * cols + col]);
  }
};

template <class Column>
struct ChunkColumnSums {
  Column column;
  int64_t rows, cols, rows_per_chunk;
  float* partial;  // (chunks, Column::kSums, cols)
  COURSE_HD void operator()(int64_t i) const {
    const int64_t chunk = i / cols, col = i % cols;
    float acc[Column::kSums] = {};
    const int64_t begin = chunk * rows_per_chunk;
    const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
    for (int64_t r = begin; r < end; ++r) column.add(r, col, acc);
    for (int s = 0; s < Column::kSums; ++s)
      partial[(chunk * Column::kSums + s) * cols + col] = acc[s];
  }
};

// The CPU's order of the same sums: index = chunk, each row's columns before the next row (a
// loop the CPU vectorises over columns). Every (chunk, column) sum still adds its rows in
// ChunkColumnSums' order, so the two give identical results.
template <class Column>
struct ChunkColumnSumsByRow {
  Column column;
  int64_t rows, cols, rows_per_chunk;
  float* partial;  // (chunks, Column::kSums, cols)
  void operator()(int64_t chunk) const {
    float* out = partial + chunk * Column::kSums * cols;
    for (int64_t i = 0; i < Column::kSums * cols; ++i) out[i] = 0.0f;
    const int64_t begin = chunk * rows_per_chunk;
    const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
    for (int64_t r = begin; r < end; ++r) {
      // The partial sums never alias the column's inputs: vectorised without the run-time alias
      // checks, of which GCC makes at most 10 (batch norm's ReLU-masked gradient terms need 12).
#pragma GCC ivdep
      for (int64_t col = 0; col < cols; ++col) {
        float acc[Column::kSums];
        for (int s = 0; s < Column::kSums; ++s) acc[s] = out[s * cols + col];
        column.add(r, col, acc);
        for (int s = 0; s < Column::kSums; ++s) out[s * cols + col] = acc[s];
      }
    }
  }
};

struct AddChunkSums {
  const float* partial;
  float* out[kMaxColumnSums];  // out[s][col] += the column's total of sum s (= without accumulate)
  int sums;
  int64_t chunks, cols;
  bool accumulate;
  // Row (s, col) of a row kernel: the lanes share the column's chunks.
  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    const int64_t s = row / cols, col = row % cols;
    const float total =
        lanes.sum(chunks, [&](int64_t chunk) { return partial[(chunk * sums + s) * cols + col]; });
    if (lanes.first()) out[s][col] = accumulate ? out[s][col] + total : total;
  }
};

}  // namespace course::ops
