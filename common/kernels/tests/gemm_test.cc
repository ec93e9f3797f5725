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

TEST_P(GemmTest, MatchesNaiveProductForOddShapesAndTransposes) {
  const GemmCase cases[] = {{1, 1, 1}, {7, 13, 5}, {1023, 7, 33}, {5, 1023, 17}, {64, 3, 1023}};
  for (const GemmCase& s : cases) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        auto a = random_tensor(ta ? Shape{s.k, s.m} : Shape{s.m, s.k}, dtype(), device(), 41);
        auto b = random_tensor(tb ? Shape{s.n, s.k} : Shape{s.k, s.n}, dtype(), device(), 42);
        auto c = random_tensor({s.m, s.n}, dtype(), device(), 43);
        const float alpha = 0.75f, beta = -0.5f;
        std::vector<float> reference(s.m * s.n);
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            double acc = 0;
            for (int64_t p = 0; p < s.k; ++p) {
              const float av = ta ? a.values[p * s.m + i] : a.values[i * s.k + p];
              const float bv = tb ? b.values[j * s.k + p] : b.values[p * s.n + j];
              acc += static_cast<double>(av) * bv;
            }
            reference[i * s.n + j] = static_cast<float>(alpha * acc + beta * c.values[i * s.n + j]);
          }
        }
        gemm(a.tensor, ta, b.tensor, tb, c.tensor, alpha, beta);
        // Sums of k products: allow the dtype's rounding of the result plus f32 accumulation.
        testing::Tolerance tol = testing::tolerance_for(dtype());
        tol.atol += 2e-6 * static_cast<double>(s.k);
        EXPECT_TRUE(testing::all_close(to_floats(c.tensor), reference, tol))
            << s.m << "x" << s.n << "x" << s.k << " ta=" << ta << " tb=" << tb;
      }
    }
  }
}

TEST_P(GemmTest, MatmulAllocatesTheResult) {
  auto a = random_tensor({3, 4}, dtype(), device(), 44);
  auto b = random_tensor({4, 2}, dtype(), device(), 45);
  Tensor c = matmul(a.tensor, b.tensor);
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
  EXPECT_EQ(c.dtype(), dtype());
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
