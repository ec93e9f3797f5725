// Attention run block by block (attention_heads.h, what ring attention does on each rank) against
// the same attention run whole, on every device and dtype: the keys cut in two blocks, each
// block's (out, lse) merged by log-sum-exp, and each block's backward from the whole lse and the
// row dots, its gradients added up. The queries see both blocks (a bidirectional attention), with
// scores of a few units either way so that the two blocks' weights differ.
#include <gtest/gtest.h>

#include <cmath>

#include "common/kernels/attention_heads.h"
#include "common/kernels/elementwise.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

using testing::accumulated;
using testing::all_close;
using testing::random_tensor;
using testing::to_floats;

class AttentionBlocksTest : public testing::DeviceCaseTest<DType> {
 protected:
  DType dtype() const { return value<0>(); }
};

constexpr int64_t kMatrices = 3, kRows = 70, kHeadDim = 4;  // 140 rows: 3 bands of the CPU loop

// Rows [h t, h t + t) of every matrix of an (n, 2t, w) tensor, and the inverse.
Tensor half_of(const Tensor& x, int h) {
  const int64_t t = x.size(1) / 2, w = x.size(2);
  Tensor out = Tensor::empty({x.size(0), t, w}, x.dtype(), x.device());
  for (int64_t m = 0; m < x.size(0); ++m) {
    Tensor into = out.slice(m, m + 1).view({t, w});
    copy_(into, x.slice(m, m + 1).view({2 * t, w}).slice(h * t, h * t + t));
  }
  return out;
}

Tensor halves_joined(const Tensor& first, const Tensor& second) {
  const int64_t t = first.size(1), w = first.size(2);
  Tensor out = Tensor::empty({first.size(0), 2 * t, w}, first.dtype(), first.device());
  for (int64_t m = 0; m < first.size(0); ++m) {
    Tensor rows = out.slice(m, m + 1).view({2 * t, w});
    Tensor top = rows.slice(0, t), bottom = rows.slice(t, 2 * t);
    copy_(top, first.slice(m, m + 1).view({t, w}));
    copy_(bottom, second.slice(m, m + 1).view({t, w}));
  }
  return out;
}

TEST_P(AttentionBlocksTest, TwoBlocksMergedEqualTheWholeForwardAndBackward) {
  const Shape whole_shape{kMatrices, 2 * kRows, kHeadDim};
  // The queries fill the first kRows rows; the other rows (zeros) only make the block square.
  const Tensor queries =
      random_tensor({kMatrices, kRows, kHeadDim}, dtype(), device(), 1, -3, 3).tensor;
  const Tensor q_whole = halves_joined(queries, zeros(queries.shape(), dtype(), device()));
  const Tensor k = random_tensor(whole_shape, dtype(), device(), 2, -3, 3).tensor;
  const Tensor v = random_tensor(whole_shape, dtype(), device(), 3).tensor;
  const Tensor dout_rows = random_tensor({kMatrices, kRows, kHeadDim}, dtype(), device(), 4).tensor;
  const Tensor dout_whole = halves_joined(dout_rows, zeros(dout_rows.shape(), dtype(), device()));

  Tensor whole, whole_lse;
  attention_heads_forward(q_whole, k, v, false, whole, whole_lse);
  AttentionHeadGradients whole_grads{Tensor::empty(whole_shape, dtype(), device()),
                                     Tensor::empty(whole_shape, dtype(), device()),
                                     Tensor::empty(whole_shape, dtype(), device())};
  attention_heads_backward(q_whole, k, v, dout_whole, whole_lse, false, Tensor(), whole_grads);

  Tensor out = zeros(queries.shape(), dtype(), device());
  Tensor lse = zeros({kMatrices, kRows}, DType::kF32, device());
  fill_(lse, -INFINITY);  // no key seen yet: the first block is taken as it is
  for (int h = 0; h < 2; ++h) {
    Tensor block_out, block_lse;
    attention_heads_forward(queries, half_of(k, h), half_of(v, h), false, block_out, block_lse);
    merge_attention_block(out, lse, block_out, block_lse);
  }
  const Tensor rows_lse = half_of(whole_lse.view({kMatrices, 2 * kRows, 1}), 0);
  EXPECT_TRUE(all_close(to_floats(out), to_floats(half_of(whole, 0)), accumulated(dtype())));
  EXPECT_TRUE(all_close(to_floats(lse.view({kMatrices, kRows, 1})), to_floats(rows_lse),
                        accumulated(DType::kF32)));

  const Tensor dots = attention_row_dots(out, dout_rows);
  AttentionHeadGradients grads{zeros(queries.shape(), dtype(), device()), Tensor(), Tensor(),
                               /*accumulate=*/true};
  for (int h = 0; h < 2; ++h) {
    grads.dk = zeros(queries.shape(), dtype(), device());
    grads.dv = zeros(queries.shape(), dtype(), device());
    attention_heads_backward(queries, half_of(k, h), half_of(v, h), dout_rows, lse, false, dots,
                             grads);
    SCOPED_TRACE(h == 0 ? "first block of keys" : "second block of keys");
    EXPECT_TRUE(all_close(to_floats(grads.dk), to_floats(half_of(whole_grads.dk, h)),
                          accumulated(dtype())));
    EXPECT_TRUE(all_close(to_floats(grads.dv), to_floats(half_of(whole_grads.dv, h)),
                          accumulated(dtype())));
  }
  EXPECT_TRUE(
      all_close(to_floats(grads.dq), to_floats(half_of(whole_grads.dq, 0)), accumulated(dtype())));
}

// Two running results that have seen no key merge to no key: lse stays -inf, the output 0.
TEST_P(AttentionBlocksTest, MergingNothingWithNothingStaysEmpty) {
  Tensor out = zeros({1, 2, 3}, dtype(), device()), lse = zeros({1, 2}, DType::kF32, device());
  fill_(lse, -INFINITY);
  merge_attention_block(out, lse, zeros({1, 2, 3}, dtype(), device()), lse.clone());
  EXPECT_EQ(to_floats(out), std::vector<float>(6, 0.0f));
  EXPECT_EQ(to_floats(lse), std::vector<float>(2, -INFINITY));
}

COURSE_INSTANTIATE_DEVICE_CASES(AttentionBlocksTest, ::testing::Values(DType::kF32, DType::kBF16));

}  // namespace
}  // namespace course
