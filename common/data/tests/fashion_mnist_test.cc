// IDX and Fashion-MNIST reading: files written here (plain and gzip), corrupt and missing
// files, and the real dataset from Debian's package against its published class balance.
#include "common/data/fashion_mnist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/data/idx.h"
#include "common/testing/errors_and_files.h"

namespace course {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::temp_path;

std::string temp_dir() { return std::filesystem::path(temp_path("x")).parent_path().string(); }

std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims,
                               const std::vector<uint8_t>& data) {
  std::vector<uint8_t> bytes = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) bytes.push_back(static_cast<uint8_t>(d >> shift));
  }
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes, bool gzip) {
  if (gzip) {
    gzFile file = gzopen(path.c_str(), "wb");
    ASSERT_NE(file, nullptr);
    ASSERT_EQ(gzwrite(file, bytes.data(), bytes.size()), static_cast<int>(bytes.size()));
    gzclose(file);
  } else {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
}

TEST(Idx, ReadsPlainAndGzipFiles) {
  std::vector<uint8_t> data(2 * 3 * 4);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  for (bool gzip : {false, true}) {
    const std::string path = temp_dir() + (gzip ? "/t.idx.gz" : "/t.idx");
    write_file(path, idx_bytes({2, 3, 4}, data), gzip);
    Tensor t = read_idx_u8(path);
    EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
    EXPECT_EQ(t.to_vector<uint8_t>(), data);
  }
}

TEST(Idx, CorruptTruncatedAndMissingFilesAreClearErrors) {
  const std::string dir = temp_dir();
  auto truncated = idx_bytes({10, 5}, std::vector<uint8_t>(49));
  write_file(dir + "/short.gz", truncated, true);
  EXPECT_THAT(
      error_of([&] { read_idx_u8(dir + "/short.gz"); }),
      HasSubstr("short.gz: truncated or corrupt IDX file: the data ended after 49 of 50 bytes"));
  auto wrong_type = idx_bytes({3}, {1, 2, 3});
  wrong_type[2] = 0x0d;  // float elements
  write_file(dir + "/float.idx", wrong_type, false);
  EXPECT_THAT(error_of([&] { read_idx_u8(dir + "/float.idx"); }),
              HasSubstr("not an IDX file of unsigned bytes"));
  write_file(dir + "/tiny.idx", {0, 0}, false);
  EXPECT_THAT(error_of([&] { read_idx_u8(dir + "/tiny.idx"); }), HasSubstr("the header ended"));
  EXPECT_THAT(error_of([&] { read_idx_u8(dir + "/absent.idx"); }),
              HasSubstr("cannot open " + dir + "/absent.idx"));
}

TEST(FashionMnist, MismatchedImagesAndLabelsAreRejected) {
  const std::string dir = temp_dir() + "/fmnist";
  std::filesystem::create_directories(dir);
  write_file(dir + "/t10k-images-idx3-ubyte.gz",
             idx_bytes({3, 28, 28}, std::vector<uint8_t>(3 * 784)), true);
  write_file(dir + "/t10k-labels-idx1-ubyte", idx_bytes({2}, {1, 2}), false);
  EXPECT_THAT(error_of([&] { load_fashion_mnist(dir, Split::kTest); }),
              HasSubstr("3 t10k images but labels of shape (2,)"));
  write_file(dir + "/t10k-labels-idx1-ubyte", idx_bytes({3}, {1, 2, 10}), false);
  EXPECT_THAT(error_of([&] { load_fashion_mnist(dir, Split::kTest); }),
              HasSubstr("t10k label 2 is 10, outside [0, 10)"));
  write_file(dir + "/t10k-labels-idx1-ubyte", idx_bytes({3}, {1, 2, 9}), false);
  const LabelledImages ok = load_fashion_mnist(dir, Split::kTest);
  EXPECT_EQ(ok.images.shape(), (Shape{3, 1, 28, 28}));
  EXPECT_EQ(ok.labels.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 9}));
  EXPECT_THAT(error_of([&] { load_fashion_mnist(dir, Split::kTrain); }),
              HasSubstr("train-images-idx3-ubyte[.gz] not found"));
}

// The installed dataset: 60,000 / 10,000 images, exactly 6,000 / 1,000 per class.
TEST(FashionMnist, InstalledDatasetHasItsPublishedSizesAndBalance) {
  if (!std::filesystem::exists(kFashionMnistDir)) {
    GTEST_SKIP() << kFashionMnistDir << " not installed (run ./setup.sh)";
  }
  for (auto [split, count] : {std::pair{Split::kTrain, 60000}, std::pair{Split::kTest, 10000}}) {
    const LabelledImages data = load_fashion_mnist(kFashionMnistDir, split);
    ASSERT_EQ(data.images.shape(), (Shape{count, 1, 28, 28}));
    std::vector<int> per_class(kFashionMnistClasses);
    for (int64_t label : data.labels.to_vector<int64_t>()) ++per_class[label];
    EXPECT_EQ(per_class, std::vector<int>(kFashionMnistClasses, count / 10));
  }
}

}  // namespace
}  // namespace course
