// The transformer's kernels against naive references computed here in double: permute by
// index arithmetic, softmax by its formula, attention with its full (T, T) score matrix
// (causal and bidirectional, forward and backward), embedding by table look-up, the class
// token by index arithmetic. On a GPU in 16 bits, attention with heads of a multiple of 8 values
// is cuDNN's flash attention, and LayerNorm cuDNN's graph, checked against the same references.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "common/kernels/attention.h"
#include "common/kernels/class_token.h"
#include "common/kernels/cudnn_norms.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/embedding.h"
#include "common/kernels/embedding_ops.h"
#include "common/kernels/flash_attention.h"
#include "common/kernels/launch.h"
#include "common/kernels/layer_norm.h"
#include "common/kernels/permute.h"
#include "common/kernels/plan_cache.h"
#include "common/kernels/softmax.h"
#include "common/kernels/tests/cudnn_expectations.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course {
namespace {

using testing::accumulated;
using testing::all_close;
using testing::random_tensor;
using testing::rounded;
using testing::to_floats;

class TransformerKernelTest : public testing::DeviceCaseTest<DType> {
 protected:
  DType dtype() const { return value<0>(); }
};

// Element (a, b, c, d) of a (2, 3, 4, 5) tensor, permuted by `order`, by index arithmetic.
std::vector<float> permuted_reference(const std::vector<float>& x, const std::vector<int>& order) {
  const int64_t shape[4] = {2, 3, 4, 5};
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    int64_t in[4], rest = i;
    for (int a = 3; a >= 0; --a) {
      in[a] = rest % shape[a];
      rest /= shape[a];
    }
    int64_t out = 0;
    for (int a = 0; a < 4; ++a) out = out * shape[order[a]] + in[order[a]];
    y[out] = x[i];
  }
  return y;
}

TEST_P(TransformerKernelTest, PermuteMovesEveryElementToItsPermutedIndex) {
  const auto x = random_tensor({2, 3, 4, 5}, dtype(), device(), 1);
  for (const std::vector<int>& order :
       {std::vector<int>{2, 0, 3, 1}, std::vector<int>{2, 0, 1, 3}, std::vector<int>{0, 1, 2, 3}}) {
    const Tensor y = permute(x.tensor, order);
    ASSERT_EQ(y.shape(), Shape({x.tensor.size(order[0]), x.tensor.size(order[1]),
                                x.tensor.size(order[2]), x.tensor.size(order[3])}));
    EXPECT_EQ(to_floats(y), permuted_reference(x.values, order));
    EXPECT_EQ(to_floats(permute(y, inverse_permutation(order))), x.values);
  }
  EXPECT_THROW(permute(x.tensor, {0, 1, 1, 3}), Error);
}

TEST_P(TransformerKernelTest, SoftmaxMatchesItsFormulaAndItsJacobian) {
  const int64_t rows = 3, cols = 37;
  const auto x = random_tensor({rows, cols}, dtype(), device(), 2, -4.0f, 4.0f);
  const auto dy = random_tensor({rows, cols}, dtype(), device(), 3);
  const Tensor y = softmax_forward(x.tensor);
  std::vector<double> y_ref(rows * cols), dx_ref(rows * cols);
  for (int64_t i = 0; i < rows; ++i) {
    double sum = 0, dot = 0;
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(double(x.values[i * cols + j]));
    for (int64_t j = 0; j < cols; ++j) {
      y_ref[i * cols + j] = std::exp(double(x.values[i * cols + j])) / sum;
      dot += dy.values[i * cols + j] * y_ref[i * cols + j];
    }
    for (int64_t j = 0; j < cols; ++j) {
      dx_ref[i * cols + j] = y_ref[i * cols + j] * (dy.values[i * cols + j] - dot);
    }
  }
  EXPECT_TRUE(all_close(to_floats(y), rounded(y_ref, dtype()), accumulated(dtype())));
  if (dtype() == DType::kF32) {  // the backward from the exact forward
    EXPECT_TRUE(
        all_close(to_floats(softmax_backward(dy.tensor, y)), rounded(dx_ref, dtype()), dtype()));
  }
}

// Attention of (B, T, 3C) q|k|v with H heads, by its definition.
struct AttentionReference {
  std::vector<double> out, dqkv;
};

AttentionReference reference_attention(const std::vector<float>& qkv,
                                       const std::vector<float>& dout, int64_t B, int64_t T,
                                       int64_t H, int64_t D, bool causal) {
  const int64_t C = H * D;
  AttentionReference r{std::vector<double>(B * T * C), std::vector<double>(B * T * 3 * C)};
  const auto at = [&](int64_t b, int64_t t, int part, int64_t h, int64_t d) {
    return ((b * T + t) * 3 + part) * C + h * D + d;
  };
  const double scale = 1.0 / std::sqrt(double(D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> P(T * T, 0.0), dP(T * T, 0.0);
      for (int64_t i = 0; i < T; ++i) {
        double max = -INFINITY;
        std::vector<double> s(T, -INFINITY);
        for (int64_t j = 0; j < (causal ? i + 1 : T); ++j) {
          s[j] = 0;
          for (int64_t d = 0; d < D; ++d) s[j] += qkv[at(b, i, 0, h, d)] * qkv[at(b, j, 1, h, d)];
          s[j] *= scale;
          max = std::max(max, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) sum += std::isinf(s[j]) ? 0 : std::exp(s[j] - max);
        for (int64_t j = 0; j < T; ++j)
          P[i * T + j] = std::isinf(s[j]) ? 0 : std::exp(s[j] - max) / sum;
        for (int64_t d = 0; d < D; ++d) {
          double o = 0;
          for (int64_t j = 0; j < T; ++j) o += P[i * T + j] * qkv[at(b, j, 2, h, d)];
          r.out[(b * T + i) * C + h * D + d] = o;
        }
      }
      // dP = dO V^T; dS = P (dP - rowsum(P dP)); dQ = scale dS K; dK = scale dS^T Q; dV = P^T dO.
      for (int64_t i = 0; i < T; ++i) {
        double row = 0;
        for (int64_t j = 0; j < T; ++j) {
          for (int64_t d = 0; d < D; ++d) {
            dP[i * T + j] += dout[(b * T + i) * C + h * D + d] * qkv[at(b, j, 2, h, d)];
          }
          row += P[i * T + j] * dP[i * T + j];
        }
        for (int64_t j = 0; j < T; ++j) {
          const double ds = P[i * T + j] * (dP[i * T + j] - row);
          for (int64_t d = 0; d < D; ++d) {
            r.dqkv[at(b, i, 0, h, d)] += scale * ds * qkv[at(b, j, 1, h, d)];
            r.dqkv[at(b, j, 1, h, d)] += scale * ds * qkv[at(b, i, 0, h, d)];
            r.dqkv[at(b, j, 2, h, d)] += P[i * T + j] * dout[(b * T + i) * C + h * D + d];
          }
        }
      }
    }
  return r;
}

TEST_P(TransformerKernelTest, AttentionMatchesTheFullScoreMatrixForwardAndBackward) {
  // T = 150: the CPU's f32 loop takes queries in bands of 64 rows, the last one short here, and
  // cuDNN's flash attention tiles of 64 or 128. Heads of 5 values take the course's kernels on
  // every device, heads of 16 cuDNN's flash attention on a GPU in 16 bits.
  const int64_t B = 2, H = 3;
  for (auto [T, causal, D] : {std::tuple<int64_t, bool, int64_t>{7, true, 5},
                              {7, false, 5},
                              {150, true, 5},
                              {150, false, 5},
                              {150, true, 16},
                              {150, false, 16}}) {
    SCOPED_TRACE(std::to_string(T) + (causal ? " positions, causal" : " positions, bidirectional") +
                 ", heads of " + std::to_string(D));
    const auto qkv = random_tensor({B, T, 3 * H * D}, dtype(), device(), 4, -2.0f, 2.0f);
    const auto dout = random_tensor({B, T, H * D}, dtype(), device(), 5);
    AttentionSaved saved;
    const Tensor out = attention_forward(qkv.tensor, H, causal, saved);
    const bool flash =
        cudnn_graphs_compiled() && device().is_cuda() && dtype() != DType::kF32 && D % 8 == 0;
    EXPECT_EQ(saved.out.defined(), flash) << "cuDNN's flash attention ran the forward";
    const AttentionReference ref = reference_attention(qkv.values, dout.values, B, T, H, D, causal);
    EXPECT_TRUE(all_close(to_floats(out), rounded(ref.out, dtype()), accumulated(dtype())));
    const Tensor dqkv = attention_backward(dout.tensor, H, causal, saved);
    ASSERT_EQ(dqkv.shape(), qkv.tensor.shape());
    EXPECT_TRUE(all_close(to_floats(dqkv), rounded(ref.dqkv, dtype()), accumulated(dtype())));
  }
}

// One row of LayerNorm in double: (x - mean) / sqrt(var + eps) w + b.
std::vector<double> layer_norm_row(const std::vector<double>& x, const std::vector<float>& w,
                                   const std::vector<float>& b, float eps) {
  double mean = 0, var = 0;
  for (double v : x) mean += v / static_cast<double>(x.size());
  for (double v : x) var += (v - mean) * (v - mean) / static_cast<double>(x.size());
  std::vector<double> y;
  for (size_t j = 0; j < x.size(); ++j)
    y.push_back((x[j] - mean) / std::sqrt(var + eps) * w[j] + b[j]);
  return y;
}

// Rows of 37 values (not a multiple of the 32 lanes), of 3 (fewer) and of 768 (GPT-2's), signed
// values and a shift: the output by its formula, the input gradient against central differences
// of sum(dy . y), the parameters' gradients (added to what they held) against their sums over the
// rows. On a GPU, cuDNN's graph runs it where the frontend's samples cover the shape (counted;
// elsewhere it may fall back), and the course's kernels then run the same forward and backward
// to the same values.
TEST_P(TransformerKernelTest, LayerNormMatchesItsFormulaAndItsDerivative) {
  const float eps = 1e-5f;
  for (const int64_t cols : {37, 3, 768}) {
    SCOPED_TRACE(cols);
    const int64_t rows = 6;
    const auto x = random_tensor({2, rows / 2, cols}, dtype(), device(), 31, -2.0f, 4.0f);
    const auto w = random_tensor({cols}, DType::kF32, device(), 32, 0.5f, 1.5f);
    const auto b = random_tensor({cols}, DType::kF32, device(), 33, -1.0f, 1.0f);
    const auto dy = random_tensor({2, rows / 2, cols}, dtype(), device(), 34);
    std::vector<double> expected, dx_expected, dw_expected(cols, 1.0), db_expected(cols, 1.0);
    for (int64_t i = 0; i < rows; ++i) {
      std::vector<double> row(x.values.begin() + i * cols, x.values.begin() + (i + 1) * cols);
      const std::vector<double> out = layer_norm_row(row, w.values, b.values, eps);
      expected.insert(expected.end(), out.begin(), out.end());
      const auto loss = [&](const std::vector<double>& v) {
        const std::vector<double> o = layer_norm_row(v, w.values, b.values, eps);
        double l = 0;
        for (int64_t j = 0; j < cols; ++j) l += dy.values[i * cols + j] * o[j];
        return l;
      };
      for (int64_t j = 0; j < cols; ++j) {
        std::vector<double> up = row, down = row;
        up[j] += 1e-5;
        down[j] -= 1e-5;
        dx_expected.push_back((loss(up) - loss(down)) / 2e-5);
        dw_expected[j] += dy.values[i * cols + j] * (out[j] - b.values[j]) / w.values[j];
        db_expected[j] += dy.values[i * cols + j];
      }
    }
    const auto run = [&] {
      LayerNormSaved saved;
      const Tensor y = layer_norm_forward(x.tensor, w.tensor, b.tensor, eps, saved);
      Tensor dw = Tensor::from_vector(std::vector<float>(cols, 1.0f), {cols}).to(device());
      Tensor db = Tensor::from_vector(std::vector<float>(cols, 1.0f), {cols}).to(device());
      const Tensor dx = layer_norm_backward(dy.tensor, x.tensor, w.tensor, saved, dw, db);
      return std::vector<std::vector<float>>{to_floats(y), to_floats(dx), to_floats(dw),
                                             to_floats(db)};
    };
    const int64_t fused_before = cudnn_graph_executions();
    const std::vector<std::vector<float>> got = run();
    if (device().is_cuda()) {
      testing::expect_cudnn_graphs(testing::cudnn_samples_cover(dtype(), cols),
                                   cudnn_graph_executions() - fused_before, 2);
    }
    const testing::Tolerance tolerance = accumulated(dtype());
    EXPECT_TRUE(all_close(got[0], rounded(expected, dtype()), tolerance)) << "y";
    EXPECT_TRUE(all_close(got[1], rounded(dx_expected, dtype()), tolerance)) << "dx";
    EXPECT_TRUE(
        all_close(got[2], std::vector<float>(dw_expected.begin(), dw_expected.end()), tolerance))
        << "dweight";
    EXPECT_TRUE(
        all_close(got[3], std::vector<float>(db_expected.begin(), db_expected.end()), tolerance))
        << "dbias";
    if (device().is_cuda()) {
      set_cudnn_norms(false);
      const std::vector<std::vector<float>> kernels = run();
      set_cudnn_norms(true);
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_TRUE(all_close(got[k], kernels[k], tolerance)) << "output " << k;
      }
    }
  }
}

TEST_P(TransformerKernelTest, CausalAttentionOfTheFirstPositionIsItsOwnValue) {
  const auto qkv = random_tensor({1, 4, 6}, dtype(), device(), 6);
  AttentionSaved saved;
  const std::vector<float> out = to_floats(attention_forward(qkv.tensor, 1, true, saved));
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 2),
            std::vector<float>(qkv.values.begin() + 4, qkv.values.begin() + 6));
}

// The token table's gradient shared out in slices of the vocabulary (as on a GPU) equals the
// CPU's single slice exactly, with tokens on every slice's first and last row and a vocabulary
// that does not divide into the slices.
TEST(TokenEmbeddingBackward, SlicesOfTheVocabularyChangeNoSum) {
  const int64_t vocabulary = 23, channels = 3, positions = 40;
  std::vector<int32_t> tokens;
  for (int64_t p = 0; p < positions; ++p) tokens.push_back(static_cast<int32_t>((p * 11) % 23));
  for (int32_t boundary : {0, 4, 5, 9, 10, 19, 20, 22}) tokens.push_back(boundary);
  const auto dy = random_tensor({static_cast<int64_t>(tokens.size()), channels}, DType::kF32,
                                Device::cpu(), 10, -3.0f, 3.0f);
  const auto gradient = [&](int64_t tokens_per_slice) {
    std::vector<float> grad(vocabulary * channels, 0.0f);
    const int64_t slices = (vocabulary + tokens_per_slice - 1) / tokens_per_slice;
    for_each_index(Device::cpu(), slices * channels,
                   ops::TokenEmbeddingBackward<float>{
                       tokens.data(), dy.tensor.data_as<float>(), grad.data(),
                       static_cast<int64_t>(tokens.size()), channels, tokens_per_slice});
    return grad;
  };
  const std::vector<float> one_slice = gradient(vocabulary);
  for (int64_t per_slice : {1, 5, 10, 22}) EXPECT_EQ(gradient(per_slice), one_slice) << per_slice;
  std::vector<double> reference(vocabulary * channels, 0.0);
  for (size_t p = 0; p < tokens.size(); ++p)
    for (int64_t c = 0; c < channels; ++c)
      reference[tokens[p] * channels + c] += dy.values[p * channels + c];
  for (size_t i = 0; i < reference.size(); ++i) EXPECT_NEAR(one_slice[i], reference[i], 1e-5);
}

TEST_P(TransformerKernelTest, EmbeddingLooksUpAndScattersBack) {
  if (dtype() != DType::kF32) GTEST_SKIP() << "tables and outputs are f32";
  const int64_t V = 5, ctx = 4, C = 3;
  const auto wte = random_tensor({V, C}, DType::kF32, device(), 7);
  const auto wpe = random_tensor({ctx, C}, DType::kF32, device(), 8);
  const std::vector<int32_t> ids = {4, 1, 1, 0, 4, 4};  // (2, 3), repeated tokens
  const Tensor tokens = Tensor::from_vector(ids, {2, 3}, device());
  std::vector<float> expected, wte_grad(V * C, 0.0f), wpe_grad(ctx * C, 0.0f);
  const auto dy = random_tensor({2, 3, C}, DType::kF32, device(), 9);
  for (int64_t bt = 0; bt < 6; ++bt)
    for (int64_t c = 0; c < C; ++c) {
      expected.push_back(wte.values[ids[bt] * C + c] + wpe.values[(bt % 3) * C + c]);
      wte_grad[ids[bt] * C + c] += dy.values[bt * C + c];
      wpe_grad[(bt % 3) * C + c] += dy.values[bt * C + c];
    }
  EXPECT_EQ(to_floats(embedding_forward(tokens, wte.tensor, wpe.tensor)), expected);
  Tensor dwte = zeros({V, C}, DType::kF32, device()), dwpe = zeros({ctx, C}, DType::kF32, device());
  embedding_backward(dy.tensor, tokens, dwte, dwpe);
  EXPECT_TRUE(all_close(to_floats(dwte), wte_grad, DType::kF32));
  EXPECT_TRUE(all_close(to_floats(dwpe), wpe_grad, DType::kF32));
  if (device().is_cpu()) {
    const Tensor bad = Tensor::from_vector(std::vector<int32_t>{0, 5}, {1, 2}, device());
    EXPECT_THAT(testing::error_of([&] { embedding_forward(bad, wte.tensor, wpe.tensor); }),
                ::testing::HasSubstr("token 5 is outside the vocabulary of 5"));
  }
  const Tensor too_long = zeros({1, ctx + 1}, DType::kI32, device());
  EXPECT_THROW(embedding_forward(too_long, wte.tensor, wpe.tensor), Error);
}

// N = 3 images of L = 5 patch tokens of C = 7 (odd sizes): [cls, patches] + positions, and
// back: the patches' gradient is dy without its first token, cls gets the first token's sum
// over the batch, positions every token's; the read-out takes token 0 and puts it back among
// zeros.
TEST_P(TransformerKernelTest, ClassTokenPrependsAddsAndSumsBack) {
  const int64_t N = 3, L = 5, C = 7;
  const auto patches = random_tensor({N, L, C}, dtype(), device(), 30, -2.0f, 2.0f);
  const auto cls = random_tensor({C}, DType::kF32, device(), 31);
  const auto positions = random_tensor({L + 1, C}, DType::kF32, device(), 32);
  const auto dy = random_tensor({N, L + 1, C}, dtype(), device(), 33);
  std::vector<double> out, dpatches, dcls(C, 0.0), dpositions((L + 1) * C, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t <= L; ++t)
      for (int64_t c = 0; c < C; ++c) {
        const double token = t == 0 ? cls.values[c] : patches.values[(n * L + t - 1) * C + c];
        out.push_back(token + positions.values[t * C + c]);
        const double d = dy.values[(n * (L + 1) + t) * C + c];
        dpositions[t * C + c] += d;
        if (t == 0) dcls[c] += d;
        if (t > 0) dpatches.push_back(d);
      }
  const Tensor y = class_token_forward(patches.tensor, cls.tensor, positions.tensor);
  EXPECT_EQ(y.dtype(), DType::kF32);
  EXPECT_TRUE(all_close(to_floats(y), rounded(out, DType::kF32), accumulated(dtype())));
  Tensor dcls_got = zeros({C}, DType::kF32, device());
  Tensor dpositions_got = zeros({L + 1, C}, DType::kF32, device());
  const Tensor dx = class_token_backward(dy.tensor, dcls_got, dpositions_got);
  EXPECT_EQ(to_floats(dx), rounded(dpatches, dtype()));
  EXPECT_TRUE(all_close(to_floats(dcls_got), rounded(dcls, DType::kF32), accumulated(dtype())));
  EXPECT_TRUE(
      all_close(to_floats(dpositions_got), rounded(dpositions, DType::kF32), accumulated(dtype())));
  const std::vector<float> first = to_floats(first_token(dy.tensor));
  std::vector<float> back(N * (L + 1) * C, 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      EXPECT_EQ(first[n * C + c], dy.values[n * (L + 1) * C + c]);
      back[n * (L + 1) * C + c] = first[n * C + c];
    }
  EXPECT_EQ(to_floats(first_token_backward(first_token(dy.tensor), L + 1)), back);
  EXPECT_THROW(
      class_token_forward(patches.tensor, cls.tensor, zeros({L, C}, DType::kF32, device())), Error);
}

COURSE_INSTANTIATE_DEVICE_CASES(TransformerKernelTest,
                                ::testing::Values(DType::kF32, DType::kF16, DType::kBF16));

}  // namespace
}  // namespace course
