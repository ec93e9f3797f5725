// The day-4 check of tensor parallelism in the course's steps, TP4.9-TP4.14, against
// single-process references on 2, 3 and 4 MPI ranks (with check_test.cc, one test), with cases
// chosen so that plausible wrong answers fail: a mapping reducing in the wrong direction,
// gathered features left in rank order, tokens of other ranks not masked, an embedding combined
// by a maximum or reading one row past its shard (the values are signed, tokens sit on every
// shard's edges), q|k|v rows taken contiguously, the bias added on every rank, a softmax
// normalised per rank or without its maximum.
#include <gtest/gtest.h>

#include <cmath>
#include <iomanip>
#include <random>

#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/nn/activation.h"
#include "common/nn/linear.h"
#include "common/nn/self_attention.h"
#include "common/testing/world.h"
#include "day4_large_models/exercises.h"

namespace day4 {
namespace {

using course::Device;
using course::DType;

using course::testing::world;

// TP4.9 ----------------------------------------------------------------------------------

// On the CPU and on each rank's simulated accelerator (a GPU's rules: no scratch on the CPU).
TEST(TP4_9, FAllReducesBackwardAndGForward) {
  const int p = world()->size(), r = world()->rank();
  for (const Device device : course::testing::check_devices()) {
    SCOPED_TRACE(device.str());
    // Rank q holds [q + 1, 2]: the sum over the ranks is [p (p + 1) / 2, 2 p].
    const Tensor t = Tensor::from_vector<float>({static_cast<float>(r + 1), 2.0f}, {2}, device);
    const std::vector<float> mine = t.to_vector<float>();
    const std::vector<float> sum = {p * (p + 1) / 2.0f, 2.0f * p};
    EXPECT_EQ(tp_mapping(TpMapping::kF, true, t, *world()).to_vector<float>(), mine)
        << "f's forward is the identity";
    EXPECT_EQ(tp_mapping(TpMapping::kF, false, t, *world()).to_vector<float>(), sum)
        << "f's backward sums the ranks' gradients";
    EXPECT_EQ(tp_mapping(TpMapping::kG, true, t, *world()).to_vector<float>(), sum)
        << "g's forward sums the ranks' partial results";
    EXPECT_EQ(tp_mapping(TpMapping::kG, false, t, *world()).to_vector<float>(), mine)
        << "g's backward is the identity";
    EXPECT_EQ(t.to_vector<float>(), mine) << "the input is not to be changed";
  }
}

// TP4.10 ----------------------------------------------------------------------------------

TEST(TP4_10, GatheredFeaturesAreEachRowsSlicesSideBySide) {
  const int p = world()->size(), r = world()->rank();
  // 3 rows of 2 features on each rank: rank q's feature j of row i is 100 i + 10 q + j.
  std::vector<float> mine;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) mine.push_back(static_cast<float>(100 * i + 10 * r + j));
  }
  std::vector<float> expected;
  for (int i = 0; i < 3; ++i) {
    for (int q = 0; q < p; ++q) {
      for (int j = 0; j < 2; ++j) expected.push_back(static_cast<float>(100 * i + 10 * q + j));
    }
  }
  for (const Device device : course::testing::check_devices()) {
    const Tensor gathered = gather_features(Tensor::from_vector(mine, {3, 2}, device), *world());
    ASSERT_EQ(gathered.shape(), (course::Shape{3, 2 * p}));
    EXPECT_EQ(gathered.device(), device);
    EXPECT_EQ(gathered.to_vector<float>(), expected) << "on rank " << r << ", " << device.str();
  }
}

// A column-parallel layer: rank r computes output features [r o/p, (r+1) o/p) from its rows of
// the weight; gathered, they are the whole layer's output.
TEST(TP4_10, AColumnParallelLayerGatheredIsTheWholeLayer) {
  const int p = world()->size(), r = world()->rank();
  std::mt19937 rng(23);
  nn::Linear whole(4, 3 * p, rng, Device::cpu());
  nn::Linear mine(whole.weight.value.slice(3 * r, 3 * r + 3).clone(),
                  whole.bias->value.slice(3 * r, 3 * r + 3).clone());
  std::vector<float> x_values(2 * 5 * 4);
  for (size_t i = 0; i < x_values.size(); ++i)
    x_values[i] = 0.1f * static_cast<float>(i % 9) - 0.3f;
  const Tensor x = Tensor::from_vector(x_values, {2, 5, 4});
  const std::vector<float> expected = whole.forward(x).to_vector<float>();
  const std::vector<float> got = gather_features(mine.forward(x), *world()).to_vector<float>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], 1e-5f) << "output element " << i << " on rank " << r;
  }
}

// Values that tell elements apart: 0.1 (i % m) - 0.3 for i = 0, 1, ...
Tensor pattern(const course::Shape& shape, int m) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = 0.1f * static_cast<float>(i % m) - 0.3f;
  return Tensor::from_vector(v, shape);
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5f + 1e-5f * std::abs(want[i])) << what << ", element " << i;
  }
}

// TP4.11 ----------------------------------------------------------------------------------

// Row t of a whole (vocabulary, channels) table of signed values, drawn from a seed every rank
// shares, so each rank can cut its own rows and compute the whole answer.
std::vector<float> signed_table(int64_t vocabulary, int64_t channels) {
  std::mt19937 rng(48);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<float> table(vocabulary * channels);
  for (float& v : table) v = value(rng);
  return table;
}

TEST(TP4_11, EveryRankGetsTheWholeEmbeddingOfEveryToken) {
  const int p = world()->size(), r = world()->rank();
  for (const Device device : course::testing::check_devices())
    for (const int64_t per_rank : {int64_t{1}, int64_t{3}}) {
      const int64_t channels = 5, vocabulary = per_rank * p;
      const std::vector<float> table = signed_table(vocabulary, channels);
      const std::vector<float> mine(table.begin() + r * per_rank * channels,
                                    table.begin() + (r + 1) * per_rank * channels);
      // Every shard's first and last rows, then every token backwards, then token 0 again.
      std::vector<int32_t> ids;
      for (int rank = 0; rank < p; ++rank) {
        ids.push_back(static_cast<int32_t>(rank * per_rank));
        ids.push_back(static_cast<int32_t>((rank + 1) * per_rank - 1));
      }
      for (int64_t t = vocabulary; t-- > 0;) ids.push_back(static_cast<int32_t>(t));
      ids.push_back(0);
      const Tensor embedded = vocab_parallel_embed(
          Tensor::from_vector<int32_t>(ids, {static_cast<int64_t>(ids.size())}, device),
          Tensor::from_vector(mine, {per_rank, channels}, device), r * per_rank, *world());
      ASSERT_EQ(embedded.shape(), (course::Shape{static_cast<int64_t>(ids.size()), channels}));
      ASSERT_EQ(embedded.device(), device) << "the embedding lives where the table does";
      const std::vector<float> got = embedded.to_vector<float>();
      for (size_t i = 0; i < ids.size(); ++i) {
        for (int64_t c = 0; c < channels; ++c) {
          const float want = table[ids[i] * channels + c], have = got[i * channels + c];
          ASSERT_EQ(have, want)
              << std::setprecision(9) << "got " << have << ", not " << want << ": token " << ids[i]
              << " (position " << i << "), channel " << c << ", on rank " << r << " of " << p
              << " with " << per_rank
              << " rows each: the rank whose rows hold the token gives its row, the others "
                 "zeros, and the ranks' lookups are summed (the values are signed)";
        }
      }
    }
}

// TP4.12 ----------------------------------------------------------------------------------

TEST(TP4_12, RowsByHand) {
  // 4 channels on 2 ranks: rank 1 keeps q rows 2-3, k rows 6-7, v rows 10-11.
  EXPECT_EQ(qkv_rows_of_rank(4, 1, 2), (std::vector<int64_t>{2, 3, 6, 7, 10, 11}));
  EXPECT_EQ(qkv_rows_of_rank(4, 0, 1),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

// Rank r's rows of the q|k|v projection, run through attention over its heads, give the whole
// attention's output features of those heads.
TEST(TP4_12, TheRanksRowsComputeItsHeadsOfTheWholeAttention) {
  const int p = world()->size(), r = world()->rank();
  const int64_t heads = 2 * p, channels = 2 * heads, per_rank = channels / p;
  std::mt19937 rng(29);
  nn::Linear qkv(channels, 3 * channels, rng, Device::cpu());
  const Tensor x = pattern({2, 5, channels}, 11);
  nn::SelfAttention whole(heads, /*causal=*/true);
  const Tensor all_heads = whole.forward(qkv.forward(x));  // (2, 5, C)

  const std::vector<int64_t> rows = qkv_rows_of_rank(channels, r, p);
  ASSERT_EQ(static_cast<int64_t>(rows.size()), 3 * per_rank) << "rows kept on rank " << r;
  const std::vector<float> w = qkv.weight.value.to_vector<float>();
  const std::vector<float> b = qkv.bias->value.to_vector<float>();
  std::vector<float> my_w, my_b;
  for (int64_t row : rows) {
    ASSERT_TRUE(row >= 0 && row < 3 * channels) << "row " << row << " of " << 3 * channels;
    my_w.insert(my_w.end(), w.begin() + row * channels, w.begin() + (row + 1) * channels);
    my_b.push_back(b[row]);
  }
  nn::Linear my_qkv(Tensor::from_vector(my_w, {3 * per_rank, channels}),
                    Tensor::from_vector(my_b, {3 * per_rank}));
  nn::SelfAttention my_heads(heads / p, /*causal=*/true);
  const Tensor mine = my_heads.forward(my_qkv.forward(x));  // (2, 5, C/p)
  std::vector<float> expected;
  const std::vector<float> whole_values = all_heads.to_vector<float>();
  for (int64_t row = 0; row < 2 * 5; ++row) {
    for (int64_t c = r * per_rank; c < (r + 1) * per_rank; ++c) {
      expected.push_back(whole_values[row * channels + c]);
    }
  }
  expect_near(mine.to_vector<float>(), expected, "rank " + std::to_string(r) + "'s heads");
}

// TP4.13 ---------------------------------------------------------------------------------

// Columns [r n, (r + 1) n) of a (rows, n p) matrix.
Tensor columns_of(const Tensor& w, int r, int p) {
  const int64_t rows = w.size(0), n = w.size(1) / p;
  const std::vector<float> all = w.to_vector<float>();
  std::vector<float> mine;
  for (int64_t i = 0; i < rows; ++i) {
    mine.insert(mine.end(), all.begin() + i * n * p + r * n, all.begin() + i * n * p + (r + 1) * n);
  }
  return Tensor::from_vector(mine, {rows, n});
}

// The feed-forward block cut over the ranks: column-parallel c_fc (the rank's rows), GELU on the
// rank's features, row-parallel c_proj (the rank's columns): the whole block's output.
TEST(TP4_13, AColumnThenRowParallelPairIsTheWholeFeedForwardBlock) {
  const int p = world()->size(), r = world()->rank();
  const int64_t channels = 3, hidden = 2 * p;
  std::mt19937 rng(31);
  nn::Linear c_fc(channels, hidden, rng, Device::cpu());
  nn::Linear c_proj(hidden, channels, rng, Device::cpu());
  course::fill_(c_proj.bias->value, 0.5);  // a bias added p times is seen
  nn::GELU gelu, my_gelu;
  const Tensor x = pattern({4, channels}, 7);
  const std::vector<float> expected =
      c_proj.forward(gelu.forward(c_fc.forward(x))).to_vector<float>();

  const int64_t n = hidden / p;
  nn::Linear my_fc(c_fc.weight.value.slice(r * n, (r + 1) * n).clone(),
                   c_fc.bias->value.slice(r * n, (r + 1) * n).clone());
  const Tensor columns = columns_of(c_proj.weight.value, r, p);  // (channels, n)
  const Tensor h = my_gelu.forward(my_fc.forward(x));
  const Tensor y = row_parallel_linear(h, columns, c_proj.bias->value, *world());
  expect_near(y.to_vector<float>(), expected, "the block's output on rank " + std::to_string(r));
}

// TP4.14 ---------------------------------------------------------------------------------

TEST(TP4_14, TheLossOfTheRanksLogitsIsTheWholeLayersLoss) {
  const int p = world()->size(), r = world()->rank();
  const int64_t rows = 6, per_rank = 3, classes = per_rank * p;
  // Logits far from zero (a softmax without its maximum overflows float's exp), the largest on
  // different ranks for different rows, and targets on every rank.
  std::vector<float> whole(rows * classes);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t c = 0; c < classes; ++c) {
      whole[i * classes + c] = 80.0f + 3.0f * std::sin(static_cast<float>(7 * i + 3 * c)) +
                               (c == (i * per_rank + 1) % classes ? 4.0f : 0.0f);
    }
  }
  std::vector<int64_t> targets(rows);
  for (int64_t i = 0; i < rows; ++i) targets[i] = (5 * i + 2) % classes;
  const Tensor labels = Tensor::from_vector<int64_t>(targets, {rows});
  const float expected =
      course::softmax_cross_entropy(Tensor::from_vector(whole, {rows, classes}), labels)
          .host_loss();
  std::vector<float> mine;
  for (int64_t i = 0; i < rows; ++i) {
    mine.insert(mine.end(), whole.begin() + i * classes + r * per_rank,
                whole.begin() + i * classes + (r + 1) * per_rank);
  }
  const float got = vocab_parallel_cross_entropy(Tensor::from_vector(mine, {rows, per_rank}),
                                                 labels, r * per_rank, *world());
  EXPECT_NEAR(got, expected, 1e-4f * std::abs(expected))
      << "the mean loss on rank " << r << " of " << p;
}

}  // namespace
}  // namespace day4
