// GEMM against a naive triple loop in double, for odd shapes, every transpose and dtype.
#include "common/kernels/gemm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tuple>

#include "common/kernels/elementwise.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

using testing::random_tensor;
using testing::to_floats;

struct GemmCase {
  int64_t m, n, k;
};

class GemmTest : public testing::DeviceCaseTest<DType> {
 protected:
  DType dtype() const { return value<0>(); }
};

// alpha op(a) op(b) + beta c for matrix `i` of a batch, in double.
std::vector<float> naive_product(const std::vector<float>& a, bool ta, const std::vector<float>& b,
                                 bool tb, const std::vector<float>& c, GemmCase s, int64_t i,
                                 float alpha, float beta) {
  const float* pa = a.data() + i * s.m * s.k;
  const float* pb = b.data() + i * s.k * s.n;
  const float* pc = c.data() + i * s.m * s.n;
  std::vector<float> out(s.m * s.n);
  for (int64_t r = 0; r < s.m; ++r) {
    for (int64_t j = 0; j < s.n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        const float av = ta ? pa[p * s.m + r] : pa[r * s.k + p];
        const float bv = tb ? pb[j * s.k + p] : pb[p * s.n + j];
        acc += static_cast<double>(av) * bv;
      }
      out[r * s.n + j] = static_cast<float>(alpha * acc + beta * pc[r * s.n + j]);
    }
  }
  return out;
}

// Sums of k products: the dtype's rounding of the result plus f32 accumulation.
testing::Tolerance product_tolerance(DType dtype, int64_t k) {
  testing::Tolerance tol = testing::tolerance_for(dtype);
  tol.atol += 2e-6 * static_cast<double>(k);
  return tol;
}

TEST_P(GemmTest, MatchesNaiveProductForOddShapesAndTransposes) {
  const GemmCase cases[] = {{1, 1, 1}, {7, 13, 5}, {1023, 7, 33}, {5, 1023, 17}, {64, 3, 1023}};
  for (const GemmCase& s : cases) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        auto a = random_tensor(ta ? Shape{s.k, s.m} : Shape{s.m, s.k}, dtype(), device(), 41);
        auto b = random_tensor(tb ? Shape{s.n, s.k} : Shape{s.k, s.n}, dtype(), device(), 42);
        auto c = random_tensor({s.m, s.n}, dtype(), device(), 43);
        const float alpha = 0.75f, beta = -0.5f;
        const std::vector<float> reference =
            naive_product(a.values, ta, b.values, tb, c.values, s, 0, alpha, beta);
        gemm(a.tensor, ta, b.tensor, tb, c.tensor, alpha, beta);
        EXPECT_TRUE(
            testing::all_close(to_floats(c.tensor), reference, product_tolerance(dtype(), s.k)))
            << s.m << "x" << s.n << "x" << s.k << " ta=" << ta << " tb=" << tb;
      }
    }
  }
}

// Each matrix of a batch is its own product (a matrix read at another's offset fails).
TEST_P(GemmTest, BatchedProductsMatchEachMatrixsProduct) {
  const int64_t batch = 3;
  for (const GemmCase& s : {GemmCase{7, 13, 5}, GemmCase{33, 2, 65}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        auto a = random_tensor(ta ? Shape{batch, s.k, s.m} : Shape{batch, s.m, s.k}, dtype(),
                               device(), 51);
        auto b = random_tensor(tb ? Shape{batch, s.n, s.k} : Shape{batch, s.k, s.n}, dtype(),
                               device(), 52);
        auto c = random_tensor({batch, s.m, s.n}, dtype(), device(), 53);
        const float alpha = -1.25f, beta = 0.5f;
        std::vector<float> reference;
        for (int64_t i = 0; i < batch; ++i) {
          const std::vector<float> one =
              naive_product(a.values, ta, b.values, tb, c.values, s, i, alpha, beta);
          reference.insert(reference.end(), one.begin(), one.end());
        }
        gemm_batched(a.tensor, ta, b.tensor, tb, c.tensor, alpha, beta);
        EXPECT_TRUE(
            testing::all_close(to_floats(c.tensor), reference, product_tolerance(dtype(), s.k)))
            << s.m << "x" << s.n << "x" << s.k << " ta=" << ta << " tb=" << tb;
      }
    }
  }
  Tensor a = zeros({2, 3, 4}, dtype(), device()), b = zeros({3, 4, 5}, dtype(), device());
  Tensor c = zeros({2, 3, 5}, dtype(), device());
  try {
    gemm_batched(a, false, b, false, c);
    FAIL() << "batches of 2 and 3 were multiplied";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("batched gemm batches differ"));
  }
}

TEST_P(GemmTest, MatmulAllocatesTheResult) {
  auto a = random_tensor({3, 4}, dtype(), device(), 44);
  auto b = random_tensor({4, 2}, dtype(), device(), 45);
  Tensor c = matmul(a.tensor, b.tensor);
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
  EXPECT_EQ(c.dtype(), dtype());
}

// A layer's weight gradient in f32 from its 16-bit activations (add_weight_gradient): the products
// of the dtype's values accumulated straight into the f32 gradient, nothing rounded to 16 bits.
TEST_P(GemmTest, SixteenBitOperandsAccumulateIntoAnF32Gradient) {
  const int64_t rows = 37, out = 5, in = 1023;
  auto grad_out = random_tensor({rows, out}, dtype(), device(), 46);
  auto input = random_tensor({rows, in}, dtype(), device(), 47);
  auto grad = random_tensor({out, in}, DType::kF32, device(), 48);
  const std::vector<float> reference = naive_product(grad_out.values, true, input.values, false,
                                                     grad.values, {out, in, rows}, 0, 1.0f, 1.0f);
  add_weight_gradient(grad_out.tensor, input.tensor, grad.tensor);
  EXPECT_TRUE(
      testing::all_close(to_floats(grad.tensor), reference, product_tolerance(DType::kF32, rows)));
}

TEST_P(GemmTest, ShapeAndDtypeMismatchesAreErrors) {
  Tensor a = zeros({3, 4}, dtype(), device());
  try {
    matmul(a, zeros({5, 2}, dtype(), device()));
    FAIL() << "a 3x4 by 5x2 product was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("gemm shapes do not match"));
  }
  EXPECT_THROW(matmul(zeros({3, 4}, DType::kI32, device()), zeros({4, 2}, DType::kI32, device())),
               Error);
  EXPECT_THROW(
      matmul(a, zeros({4, 2}, dtype() == DType::kF32 ? DType::kF16 : DType::kF32, device())),
      Error);
  EXPECT_THROW(matmul(zeros({3}, dtype(), device()), a), Error);
}

COURSE_INSTANTIATE_DEVICE_CASES(GemmTest,
                                ::testing::Values(DType::kF32, DType::kF16, DType::kBF16));

}  // namespace
}  // namespace course
