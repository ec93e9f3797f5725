// Column sums (column_sums.h): the GPU's order (a thread per chunk and column) and the CPU's
// (a chunk's rows in storage order) must make the same additions, so both give identical bits;
// and the sums must be right, chunks uneven, signed values, tall matrices summed in several
// passes, against a double reference.
#include "common/kernels/column_sums.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

#include "common/kernels/column_sums_ops.h"
#include "common/testing/devices.h"
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

// Tall matrices take later passes over their partial sums: none at exactly kMaxFinishedChunks
// chunks, one just past it, two for an NHWC batch's pixels; each total against a double sum, on
// every device (the GPU's passes are its own launches).
class ColumnSumsOnDevices : public testing::DeviceTest {};

TEST_P(ColumnSumsOnDevices, TallMatricesAddTheirPartialsInPassesAndStayExact) {
  const int64_t cols = 3;
  const int64_t one_pass = ops::kMaxFinishedChunks * ops::kRowsPerChunk;
  for (const int64_t rows : {one_pass, one_pass + 1, int64_t{70001}}) {
    const testing::TestTensor random =
        testing::random_tensor({rows, cols}, DType::kF32, device(), 5, -8.0f, 9.0f);
    Tensor totals = Tensor::from_vector(std::vector<float>(cols, -1.0f), {cols}, device());
    add_column_sums(device(), ops::ColumnOf<float>{random.tensor.data_as<float>(), cols}, rows,
                    cols, std::array<float*, 1>{totals.data_as<float>()});
    const std::vector<float> got = totals.to(Device::cpu()).to_vector<float>();
    for (int64_t c = 0; c < cols; ++c) {
      double reference = -1.0;
      for (int64_t r = 0; r < rows; ++r) reference += random.values[r * cols + c];
      EXPECT_NEAR(got[c], reference, 1e-5 * rows) << rows << " rows, column " << c;
    }
  }
}

COURSE_INSTANTIATE_DEVICE_TESTS(ColumnSumsOnDevices);

}  // namespace
}  // namespace course
