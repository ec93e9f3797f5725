// The text pipeline: fortunes read as "%"-separated documents (index files skipped), the byte
// tokenizer's round trip, the seeded document split, the unigram entropy against a hand value,
// and token windows that are contiguous slices of the stream dealt disjointly over ranks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "common/data/text_corpus.h"
#include "common/data/token_windows.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/mutate.h"

namespace course {
namespace {

using ::testing::HasSubstr;

TEST(Fortunes, DocumentsAreSeparatedByPercentLinesAndIndexFilesSkipped) {
  const std::string dir = testing::temp_path("fortunes");
  std::filesystem::create_directories(dir);
  testing::write_file(dir + "/b", "one\ntwo lines\n%\nthree\n%\n");
  testing::write_file(dir + "/a", "first\n%\n");
  testing::write_file(dir + "/a.dat", "\x01\x02 binary index");
  EXPECT_EQ(load_fortunes(dir),
            (std::vector<std::string>{"first\n", "one\ntwo lines\n", "three\n"}));
  EXPECT_THAT(testing::error_of([] { load_fortunes("/no/such/corpus"); }),
              HasSubstr("install Debian's fortunes package"));
}

TEST(Fortunes, TheEmbeddedCorpusIsMegabytesOfEnglish) {
  if (!std::filesystem::is_directory(kFortunesDir)) {
    GTEST_SKIP() << kFortunesDir << " is not installed (./setup.sh installs it)";
  }
  const std::vector<std::string> documents = load_fortunes(kFortunesDir);
  int64_t bytes = 0;
  for (const auto& d : documents) bytes += static_cast<int64_t>(d.size());
  EXPECT_GT(documents.size(), 10000u);
  EXPECT_GT(bytes, 2'000'000);
  const TokenSplit split = split_documents(documents, 0.1, 0);
  // English text with its layout: between 4 and 5 bits (2.8-3.5 nats) per byte without context
  // (fortunes: 3.30 nats).
  EXPECT_NEAR(unigram_entropy(split.train), 3.15, 0.35);
  EXPECT_NEAR(static_cast<double>(split.val.numel()) / (split.train.numel() + split.val.numel()),
              0.1, 0.02);
}

TEST(ByteTokenizer, RoundTripsAnyBytes) {
  const std::string text = "caf\xc3\xa9 \x01\xff\n";
  const Tensor tokens = encode_bytes(text);
  const std::vector<int32_t> values = tokens.to_vector<int32_t>();
  EXPECT_EQ(values[3], 0xc3);
  EXPECT_EQ(values[7], 0xff);
  EXPECT_EQ(decode_bytes(values), text);
  EXPECT_THAT(testing::error_of([] { decode_bytes({65, 300}); }), HasSubstr("not a byte"));
}

TEST(DocumentSplit, IsSeededAndKeepsEveryDocument) {
  std::vector<std::string> documents;
  for (int i = 0; i < 200; ++i) documents.push_back(std::string(1 + i % 7, 'a' + i % 26));
  const TokenSplit a = split_documents(documents, 0.25, 3), b = split_documents(documents, 0.25, 3);
  EXPECT_EQ(a.val.to_vector<int32_t>(), b.val.to_vector<int32_t>());
  int64_t total = 0;
  for (const auto& d : documents) total += static_cast<int64_t>(d.size()) + 1;
  EXPECT_EQ(a.train.numel() + a.val.numel(), total);
  EXPECT_NE(split_documents(documents, 0.25, 4).val.to_vector<int32_t>(),
            a.val.to_vector<int32_t>());
}

TEST(UnigramEntropy, OfTwoEquallyFrequentBytesIsLnTwo) {
  EXPECT_NEAR(unigram_entropy(Tensor::from_vector<int32_t>({7, 9, 9, 7}, {4})), std::log(2.0),
              1e-12);
  EXPECT_EQ(unigram_entropy(Tensor::from_vector<int32_t>({5, 5, 5}, {3})), 0.0);
}

TEST(UnigramEntropy, CountsTokensBeyondABytesRange) {
  EXPECT_NEAR(unigram_entropy(Tensor::from_vector<int32_t>({50256, 3, 1000, 3}, {4})),
              1.5 * std::log(2.0), 1e-12);
  EXPECT_THAT(testing::error_of([] {
                unigram_entropy(Tensor::from_vector<int32_t>({1, -2}, {2}));
              }),
              HasSubstr("negative"));
}

// GPT-2's vocabulary of random tokens (--synthetic-tokens): every token in range, the split at
// the fraction, the draws uniform (the unigram entropy of 200,000 draws over 50,257 values is
// within 0.3 nats of ln 50,257: a draw over a smaller range, or a constant, falls far below),
// the same stream for the same seed and another for another.
TEST(RandomTokens, AreUniformOverTheVocabularyAndSplitAtTheFraction) {
  const int64_t vocabulary = 50257, count = 200000;
  const TokenSplit split = random_tokens(count, vocabulary, 0.05, 3);
  EXPECT_EQ(split.val.numel(), 10000);
  EXPECT_EQ(split.train.numel(), count - 10000);
  const std::vector<int32_t> train = split.train.to_vector<int32_t>();
  EXPECT_GE(*std::min_element(train.begin(), train.end()), 0);
  EXPECT_LT(*std::max_element(train.begin(), train.end()), vocabulary);
  EXPECT_GT(*std::max_element(train.begin(), train.end()), vocabulary - 100)
      << "the top of the range";
  EXPECT_LT(*std::min_element(train.begin(), train.end()), 100) << "the bottom of the range";
  EXPECT_NEAR(unigram_entropy(split.train), std::log(static_cast<double>(vocabulary)), 0.3);
  EXPECT_EQ(random_tokens(count, vocabulary, 0.05, 3).val.to_vector<int32_t>(),
            split.val.to_vector<int32_t>());
  EXPECT_NE(random_tokens(count, vocabulary, 0.05, 4).val.to_vector<int32_t>(),
            split.val.to_vector<int32_t>());
  EXPECT_THAT(testing::error_of([] { random_tokens(10, 256, 0.01, 0); }),
              HasSubstr("do not split"));
}

Tensor positions(int64_t n) {
  std::vector<int32_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(i);
  return Tensor::from_vector(v, {n});
}

TEST(TokenWindows, RowsAreContiguousWindowsDealtDisjointlyOverRanks) {
  // 101 tokens, context 10: windows start at 0, 10, ..., 90 (10 windows of 11 tokens).
  const TokenWindowOptions o{.batch_size = 2, .context = 10, .seed = 5};
  std::set<int32_t> starts;
  for (int rank = 0; rank < 3; ++rank) {
    TokenWindows windows(positions(101), o, rank, 3);
    EXPECT_EQ(windows.windows(), 10);
    ASSERT_EQ(windows.batches(), 1);  // 3 windows per rank, batches of 2
    windows.set_epoch(1);
    const Tensor batch = windows.batch(0);
    ASSERT_EQ(batch.shape(), (Shape{2, 11}));
    const std::vector<int32_t> v = batch.to_vector<int32_t>();
    for (int row = 0; row < 2; ++row) {
      EXPECT_EQ(v[row * 11] % 10, 0);
      for (int j = 1; j < 11; ++j) EXPECT_EQ(v[row * 11 + j], v[row * 11] + j);
      EXPECT_TRUE(starts.insert(v[row * 11]).second) << "window " << v[row * 11] << " twice";
    }
  }
  TokenWindows a(positions(101), o), b(positions(101), o);
  EXPECT_EQ(a.batch(2).to_vector<int32_t>(), b.batch(2).to_vector<int32_t>());
  b.set_epoch(1);
  std::vector<int32_t> epoch0, epoch1;
  for (int64_t i = 0; i < a.batches(); ++i) {
    for (int32_t t : a.batch(i).to_vector<int32_t>()) epoch0.push_back(t);
    for (int32_t t : b.batch(i).to_vector<int32_t>()) epoch1.push_back(t);
  }
  EXPECT_NE(epoch0, epoch1) << "set_epoch must reshuffle";
}

// Micro-batch 1 of 3 of six windows of 2 tokens, by hand: windows 2-3 and their 4 targets;
// the first and last micro-batches at the edges; a count that does not divide is refused.
TEST(TokenWindows, MicroBatchesAreEqualRunsOfWindowsAndTheirTargets) {
  std::vector<int32_t> windows;
  for (int32_t k = 0; k < 18; ++k) windows.push_back(k);
  const NextTokenBatch batch =
      next_token_batch(Tensor::from_vector(windows, {6, 3}), Device::cpu());
  const NextTokenBatch middle = micro_batch_of(batch, 1, 3);
  EXPECT_EQ(middle.inputs.to_vector<int32_t>(), (std::vector<int32_t>{6, 7, 9, 10}));
  EXPECT_EQ(middle.targets.to_vector<int64_t>(), (std::vector<int64_t>{7, 8, 10, 11}));
  EXPECT_EQ(micro_batch_of(batch, 0, 6).inputs.to_vector<int32_t>(), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(micro_batch_of(batch, 5, 6).targets.to_vector<int64_t>(),
            (std::vector<int64_t>{16, 17}));
  EXPECT_THAT(testing::error_of([&] { micro_batch_of(batch, 0, 4); }),
              ::testing::HasSubstr("targets has no micro-batch 0 of 4 equal ones"));
  EXPECT_THROW(micro_batch_of(batch, 3, 3), Error);
}

// An image batch: 4 images of 2 x 2 and their labels; the second half is images 2-3 and
// labels 2-3. Labels that are not a whole number per image are refused.
TEST(TokenWindows, MicroBatchesOfImagesAndLabels) {
  std::vector<float> pixels(16);
  for (size_t k = 0; k < pixels.size(); ++k) pixels[k] = static_cast<float>(k) - 7.5f;
  const NextTokenBatch images{Tensor::from_vector(pixels, {4, 1, 2, 2}),
                              Tensor::from_vector<int64_t>({9, 0, 4, 7}, {4})};
  const NextTokenBatch second = micro_batch_of(images, 1, 2);
  EXPECT_EQ(second.inputs.shape(), (Shape{2, 1, 2, 2}));
  EXPECT_EQ(second.inputs.to_vector<float>(),
            (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f}));
  EXPECT_EQ(second.targets.to_vector<int64_t>(), (std::vector<int64_t>{4, 7}));
  EXPECT_THROW(micro_batch_of({images.inputs, Tensor::from_vector<int64_t>({1, 2, 3}, {3})}, 0, 2),
               Error);
}

TEST(TokenWindows, AStreamTooShortForABatchIsOneClearError) {
  EXPECT_THAT(
      testing::error_of([] { TokenWindows(positions(20), {.batch_size = 4, .context = 8}); }),
      HasSubstr("not one batch of 4"));
}

}  // namespace
}  // namespace course
