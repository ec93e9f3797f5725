// GEMM against a naive triple loop in double, for odd shapes, every transpose and dtype; a fully
// connected layer's product with its bias (and GELU) epilogue, and its parameters' gradients,
// against their definitions.
#include "common/kernels/gemm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "common/kernels/elementwise.h"
#include "common/kernels/linear.h"
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

// A fully connected layer's parameter gradients (add_linear_gradients) accumulated into f32
// gradients that already hold values (a second micro-batch's): dW += dy^T x and db += dy's column
// sums, against the definition in double, for widths of whole 16-byte rows (a GPU's cuBLASLt
// epilogue, asserted to have run) or not, a weight gradient that is a view at an odd offset of a
// flat buffer (no epilogue on a GPU: it writes aligned rows), and without a bias.
TEST_P(GemmTest, LinearGradientsAccumulateTheDefinition) {
  struct Case {
    int64_t rows, in, out;
    bool offset_gradient;
  };
  for (const Case c : {Case{33, 24, 16, false}, Case{7, 13, 24, false}, Case{40, 16, 8, true},
                       Case{5, 8, 13, false}}) {
    const auto dy = random_tensor({c.rows, c.out}, dtype(), device(), 60, -2.0f, 2.0f);
    const auto x = random_tensor({c.rows, c.in}, dtype(), device(), 61, -1.0f, 1.0f);
    const int64_t offset = c.offset_gradient ? 1 : 0;
    auto flat = random_tensor({offset + c.out * c.in}, DType::kF32, device(), 62, -1.0f, 1.0f);
    Tensor weight_grad = flat.tensor.slice(offset, offset + c.out * c.in).view({c.out, c.in});
    auto bias_grad = random_tensor({c.out}, DType::kF32, device(), 63, -1.0f, 1.0f);
    std::vector<float> weight_ref(c.out * c.in), bias_ref(c.out);
    for (int64_t o = 0; o < c.out; ++o) {
      double bias_sum = bias_grad.values[o];
      for (int64_t r = 0; r < c.rows; ++r) bias_sum += dy.values[r * c.out + o];
      bias_ref[o] = static_cast<float>(bias_sum);
      for (int64_t i = 0; i < c.in; ++i) {
        double sum = flat.values[offset + o * c.in + i];
        for (int64_t r = 0; r < c.rows; ++r) {
          sum += double(dy.values[r * c.out + o]) * x.values[r * c.in + i];
        }
        weight_ref[o * c.in + i] = static_cast<float>(sum);
      }
    }
    const std::string shape = std::to_string(c.rows) + " rows, " + std::to_string(c.in) + " -> " +
                              std::to_string(c.out) + (offset ? ", offset gradient" : "");
    const int64_t fused_before = cublaslt_linear_executions();
    add_linear_gradients(dy.tensor, x.tensor, weight_grad, &bias_grad.tensor);
    EXPECT_TRUE(testing::all_close(to_floats(weight_grad), weight_ref,
                                   product_tolerance(DType::kF32, c.rows)))
        << "weight gradient, " << shape;
    EXPECT_TRUE(testing::all_close(to_floats(bias_grad.tensor), bias_ref,
                                   product_tolerance(DType::kF32, c.rows)))
        << "bias gradient, " << shape;
    const bool whole_rows = c.in % 8 == 0 && c.out % 8 == 0 && !c.offset_gradient;
    EXPECT_EQ(cublaslt_linear_executions() - fused_before, device().is_cuda() && whole_rows ? 1 : 0)
        << shape;
    EXPECT_EQ(to_floats(flat.tensor.slice(0, offset)),
              std::vector<float>(flat.values.begin(), flat.values.begin() + offset))
        << "the element before an offset gradient is not the layer's";
  }
  // Without a bias: the weight gradient alone.
  const auto dy = random_tensor({6, 8}, dtype(), device(), 64);
  const auto x = random_tensor({6, 16}, dtype(), device(), 65);
  auto weight_grad = random_tensor({8, 16}, DType::kF32, device(), 66);
  const std::vector<float> reference = naive_product(dy.values, true, x.values, false,
                                                     weight_grad.values, {8, 16, 6}, 0, 1.0f, 1.0f);
  add_linear_gradients(dy.tensor, x.tensor, weight_grad.tensor, nullptr);
  EXPECT_TRUE(testing::all_close(to_floats(weight_grad.tensor), reference,
                                 product_tolerance(DType::kF32, 6)));
  Tensor wrong_bias = zeros({7}, DType::kF32, device());
  EXPECT_THROW(add_linear_gradients(dy.tensor, x.tensor, weight_grad.tensor, &wrong_bias), Error)
      << "a bias gradient of the wrong width";
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

// A fully connected layer's product with its bias, and with GELU after the bias (tanh form),
// against the definition in double: the output and the pre-activation, on shapes whose widths
// are multiples of 8 (a GPU's cuBLASLt epilogues, asserted to have run) or not (where a GPU may
// fall back), signed values.
// Where the kernels run on the host, it equals, bit for bit, the product, the bias pass and the
// GELU pass apart (what the layers computed before the epilogue was fused).
TEST_P(GemmTest, LinearEpiloguesMatchTheDefinition) {
  struct Case {
    int64_t rows, in, out;
  };
  for (const Case c : {Case{7, 13, 24}, Case{33, 24, 16}, Case{5, 8, 13}}) {
    const auto x = random_tensor({c.rows, c.in}, dtype(), device(), 40, -2.0f, 2.0f);
    const auto w = random_tensor({c.out, c.in}, dtype(), device(), 41, -1.0f, 1.0f);
    const auto bias = random_tensor({c.out}, DType::kF32, device(), 42, -1.0f, 1.0f);
    std::vector<double> pre_ref(c.rows * c.out), y_ref(c.rows * c.out);
    for (int64_t i = 0; i < c.rows; ++i) {
      for (int64_t o = 0; o < c.out; ++o) {
        double sum = bias.values[o];
        for (int64_t k = 0; k < c.in; ++k) {
          sum += double(x.values[i * c.in + k]) * w.values[o * c.in + k];
        }
        pre_ref[i * c.out + o] = sum;
        const double u = std::sqrt(2.0 / M_PI) * (sum + 0.044715 * sum * sum * sum);
        y_ref[i * c.out + o] = 0.5 * sum * (1.0 + std::tanh(u));
      }
    }
    const std::string shape =
        std::to_string(c.rows) + "x" + std::to_string(c.in) + " by " + std::to_string(c.out);
    const int64_t fused_before = cublaslt_linear_executions();
    const Tensor biased =
        linear_forward(x.tensor, w.tensor, bias.tensor, LinearEpilogue::kBias, nullptr);
    EXPECT_TRUE(testing::all_close(to_floats(biased), testing::rounded(pre_ref, dtype()),
                                   testing::accumulated(dtype())))
        << "bias, " << shape;
    Tensor pre;
    const Tensor activated =
        linear_forward(x.tensor, w.tensor, bias.tensor, LinearEpilogue::kBiasGelu, &pre);
    EXPECT_TRUE(testing::all_close(to_floats(pre), testing::rounded(pre_ref, dtype()),
                                   testing::accumulated(dtype())))
        << "pre-activation, " << shape;
    EXPECT_TRUE(testing::all_close(to_floats(activated), testing::rounded(y_ref, dtype()),
                                   testing::accumulated(dtype())))
        << "bias + GELU, " << shape;
    if (device().is_cuda()) {
      // Widths of whole 16-byte rows take cuBLASLt's epilogues, both of them; odd widths may
      // fall back (GELU's must: its pre-activation's leading dimension).
      if (c.in % 8 == 0 && c.out % 8 == 0) {
        EXPECT_EQ(cublaslt_linear_executions() - fused_before, 2) << shape;
      }
    } else {
      EXPECT_EQ(cublaslt_linear_executions(), fused_before) << "a GPU's alone";
      Tensor apart = matmul(x.tensor, w.tensor, false, true);
      add_row_bias_(apart, bias.tensor);
      EXPECT_EQ(to_floats(biased), to_floats(apart)) << shape;
      EXPECT_EQ(to_floats(pre), to_floats(apart)) << shape;
      EXPECT_EQ(to_floats(activated), to_floats(gelu_forward(apart))) << shape;
    }
  }
  const Tensor x = zeros({2, 3}, dtype(), device()), w = zeros({8, 3}, dtype(), device());
  EXPECT_THROW(
      linear_forward(x, w, zeros({8}, DType::kF32, device()), LinearEpilogue::kBiasGelu, nullptr),
      Error)
      << "GELU's pre-activation has nowhere to go";
  EXPECT_THROW(
      linear_forward(x, w, zeros({7}, DType::kF32, device()), LinearEpilogue::kBias, nullptr),
      Error)
      << "a bias of the wrong width";
  EXPECT_THROW(linear_forward(x, zeros({8, 4}, dtype(), device()),
                              zeros({8}, DType::kF32, device()), LinearEpilogue::kBias, nullptr),
               Error)
      << "a weight of the wrong width";
}

COURSE_INSTANTIATE_DEVICE_CASES(GemmTest,
                                ::testing::Values(DType::kF32, DType::kF16, DType::kBF16));

}  // namespace
}  // namespace course
