// Deterministic column sums of a (rows, cols) matrix in two passes, so a GPU has enough threads
// for them (one thread per column would leave most of its SMs idle: 768 columns are 3 blocks):
//   1. ChunkColumnSums: index i = (chunk, column) sums the column over its chunk of
//      kRowsPerChunk rows into partial[chunk][s][column] (coalesced: neighbouring threads read
//      neighbouring columns of the same row);
//   2. AddChunkSums: index = column adds the chunks' partials in chunk order to the outputs.
// The result does not depend on the number of threads or the device. `Column` gives the
// summands: COURSE_HD void add(int64_t row, int64_t col, float* acc) const adds to its kSums
// running sums (a bias gradient: 1; LayerNorm's weight and bias gradients: 2).
#pragma once

#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

inline constexpr int64_t kRowsPerChunk = 64;
inline constexpr int kMaxColumnSums = 2;

COURSE_HD inline int64_t row_chunks(int64_t rows) {
  return (rows + kRowsPerChunk - 1) / kRowsPerChunk;
}

template <class Column>
struct ChunkColumnSums {
  Column column;
  int64_t rows, cols;
  float* partial;  // (chunks, Column::kSums, cols)
  COURSE_HD void operator()(int64_t i) const {
    const int64_t chunk = i / cols, col = i % cols;
    float acc[Column::kSums] = {};
    const int64_t begin = chunk * kRowsPerChunk;
    const int64_t end = begin + kRowsPerChunk < rows ? begin + kRowsPerChunk : rows;
    for (int64_t r = begin; r < end; ++r) column.add(r, col, acc);
    for (int s = 0; s < Column::kSums; ++s)
      partial[(chunk * Column::kSums + s) * cols + col] = acc[s];
  }
};

struct AddChunkSums {
  const float* partial;
  float* out[kMaxColumnSums];  // out[s][col] += the column's total of sum s
  int sums;
  int64_t chunks, cols;
  COURSE_HD void operator()(int64_t col) const {
    for (int s = 0; s < sums; ++s) {
      float total = 0.0f;
      for (int64_t chunk = 0; chunk < chunks; ++chunk)
        total += partial[(chunk * sums + s) * cols + col];
      out[s][col] += total;
    }
  }
};

}  // namespace course::ops
