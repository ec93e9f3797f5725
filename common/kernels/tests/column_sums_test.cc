// Column sums (column_sums.h): the GPU's order (a thread per chunk and column) and the CPU's
// (a chunk's rows in storage order) must make the same additions, so both give identical bits;
// and the sums must be right, chunks uneven, signed values, against a double reference.
#include "common/kernels/column_sums.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

#include "common/kernels/linear_ops.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

TEST(ColumnSums, TheCpuOrderAndTheGpuOrderAgreeExactly) {
  const int64_t rows = 203, cols = 37, rows_per_chunk = 16, chunks = 13;
  const testing::TestTensor random =
      testing::random_tensor({rows, cols}, DType::kF32, Device::cpu(), 3, -50.0f, 50.0f);
  const Tensor& x = random.tensor;
  const ops::ColumnOf<float> column{x.data_as<float>(), cols};
  std::vector<float> by_row(chunks * cols), by_column(chunks * cols);
  chunk_column_sums(Device::cpu(), column, rows, cols, rows_per_chunk, by_row.data());
  for_each_index(Device::cpu(), chunks * cols,
                 ops::ChunkColumnSums<ops::ColumnOf<float>>{column, rows, cols, rows_per_chunk,
                                                            by_column.data()});
  EXPECT_EQ(by_row, by_column);

  std::vector<float> totals(cols, 0.5f);
  add_column_sums(Device::cpu(), column, rows, cols, std::array<float*, 1>{totals.data()});
  const std::vector<float>& values = random.values;
  for (int64_t c = 0; c < cols; ++c) {
    double reference = 0.5;
    for (int64_t r = 0; r < rows; ++r) reference += values[r * cols + c];
    EXPECT_NEAR(totals[c], reference, 1e-3) << "column " << c;
  }
}

}  // namespace
}  // namespace course
