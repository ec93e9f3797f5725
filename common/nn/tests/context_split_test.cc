// Context parallelism's cut of a sequence, by hand: the load-balanced positions of each rank, a
// rank's rows of a tensor and of a position table, and the table rows' adjoint (each position's
// gradient added to its own row, nothing elsewhere). Sizes that do not cut are refused.
#include "common/nn/context_split.h"

#include <gtest/gtest.h>

#include "common/kernels/elementwise.h"
#include "common/testing/errors_and_files.h"

namespace course::nn {
namespace {

std::vector<float> counting(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(ContextSplit, PositionsPairAnEarlyChunkWithALateOne) {
  EXPECT_EQ((ContextSplit{0, 2}.positions(8)), (std::vector<int32_t>{0, 1, 6, 7}));
  EXPECT_EQ((ContextSplit{1, 2}.positions(8)), (std::vector<int32_t>{2, 3, 4, 5}));
  EXPECT_EQ((ContextSplit{3, 4}.positions(8)), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ((ContextSplit{0, 4}.positions(16)), (std::vector<int32_t>{0, 1, 14, 15}));
  EXPECT_EQ((ContextSplit{}.positions(6)), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_NE(testing::error_of([] {
              ContextSplit{0, 4}.positions(12);
            }).find("does not cut into 2 x 4 equal chunks"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] {
              ContextSplit{2, 2}.positions(8);
            }).find("context-parallel rank 2 of 2"),
            std::string::npos);
}

TEST(ContextSplit, RowsOfATensorFollowThePositions) {
  // (2, 8, 2): sample b, position t holds 100 b + 2 t and 100 b + 2 t + 1.
  std::vector<float> whole(32);
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 8; ++t)
      for (int c = 0; c < 2; ++c) whole[(b * 8 + t) * 2 + c] = 100.0f * b + 2.0f * t + c;
  const Tensor rows = ContextSplit{1, 2}.rows_of(Tensor::from_vector<float>(whole, {2, 8, 2}));
  EXPECT_EQ(rows.shape(), Shape({2, 4, 2}));
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11,  //
                                                         104, 105, 106, 107, 108, 109, 110, 111}));
  // Integer tokens too.
  const Tensor tokens = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7}, {1, 8});
  const ContextSplit first{0, 2};
  EXPECT_EQ(first.rows_of(tokens).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 6, 7}));
  // Flat targets of 2 windows of 8: each window's rows, flat again.
  std::vector<int64_t> targets(16);
  for (int i = 0; i < 16; ++i) targets[i] = i;
  EXPECT_EQ(first.flat_rows_of(Tensor::from_vector<int64_t>(targets, {16}), 2).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 6, 7, 8, 9, 14, 15}));
}

TEST(ContextSplit, TableRowsAndTheirAdjoint) {
  // A table longer than the sequence (the model's context): rows past seq are never touched.
  const Tensor table = Tensor::from_vector<float>(counting(20), {10, 2});
  const ContextSplit split{0, 2};
  EXPECT_EQ(split.table_rows(table, 8).to_vector<float>(),
            (std::vector<float>{0, 1, 2, 3, 12, 13, 14, 15}));
  Tensor grad = zeros({10, 2});
  split.add_table_rows(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}), 8, grad);
  split.add_table_rows(Tensor::from_vector<float>({1, 1, 1, 1, 1, 1, 1, 1}, {4, 2}), 8, grad);
  EXPECT_EQ(grad.to_vector<float>(), (std::vector<float>{2, 3, 4, 5, 0, 0, 0, 0, 0, 0,  //
                                                         0, 0, 6, 7, 8, 9, 0, 0, 0, 0}));
  EXPECT_NE(testing::error_of([&] { split.table_rows(table, 12); }).find("at least 12 rows"),
            std::string::npos);
}

}  // namespace
}  // namespace course::nn
