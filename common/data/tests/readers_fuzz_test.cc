// Fuzz tests of the readers of outside bytes: IDX files (raw and gzip), Fashion-MNIST's pair of
// files, and images in an ImageFolder (PNG and JPEG through OpenCV, then the transforms). Each
// of thousands of seeded mutations of a valid file must give a clean course::Error or a
// well-formed result: never a crash, a hang or (under --config=asan) a sanitizer report.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <numeric>
#include <opencv2/imgcodecs.hpp>

#include "common/data/fashion_mnist.h"
#include "common/data/idx.h"
#include "common/data/image_folder.h"
#include "common/data/transforms.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/mutate.h"

namespace course {
namespace {

namespace fs = std::filesystem;
using testing::Mutator;

constexpr int kMutants = 1500;

std::string idx_file_bytes(uint32_t magic, const std::vector<uint32_t>& dims) {
  std::string bytes;
  const auto put = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(v >> shift));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  const uint32_t count = std::accumulate(dims.begin(), dims.end(), 1u, std::multiplies<>());
  for (uint32_t i = 0; i < count; ++i) bytes.push_back(static_cast<char>(i * 7));
  return bytes;
}

void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

// Runs `read` on every mutant: a course::Error is a clean refusal; anything else escapes.
template <class Read>
int64_t fuzz(const std::string& valid, const std::string& path, uint32_t seed, Read read,
             bool gzip = false) {
  Mutator mutator(seed);
  int64_t accepted = 0;
  for (int i = 0; i < kMutants; ++i) {
    const std::string mutant = mutator.mutate(valid);
    if (gzip) {
      write_gzip(path, mutant);
    } else {
      testing::write_file(path, mutant);
    }
    try {
      read();
      ++accepted;
    } catch (const Error&) {
    }
  }
  return accepted;
}

void expect_well_formed(const Tensor& t) {
  ASSERT_EQ(t.dtype(), DType::kU8);
  const uint8_t* p = t.data_as<uint8_t>();
  int64_t sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) sum += p[i];  // every byte readable
  EXPECT_GE(sum, 0);
}

TEST(ReadersFuzz, IdxFilesRawAndCompressed) {
  const std::string valid = idx_file_bytes(0x00000803, {5, 4, 4});
  const std::string path = testing::temp_path("fuzz.idx");
  const int64_t raw = fuzz(valid, path, 1, [&] { expect_well_formed(read_idx_u8(path)); });
  const std::string gz = testing::temp_path("fuzz.idx.gz");
  const int64_t zipped = fuzz(
      valid, gz, 2, [&] { expect_well_formed(read_idx_u8(gz)); }, /*gzip=*/true);
  std::printf("IDX mutants read as well-formed tensors: %lld raw, %lld gzip of %d each\n",
              static_cast<long long>(raw), static_cast<long long>(zipped), kMutants);
}

TEST(ReadersFuzz, FashionMnistLabelsThatDisagreeWithTheImages) {
  const std::string dir = testing::temp_path("fuzz-fmnist");
  fs::create_directories(dir);
  testing::write_file(dir + "/t10k-images-idx3-ubyte", idx_file_bytes(0x00000803, {6, 28, 28}));
  std::string labels = idx_file_bytes(0x00000801, {6});
  for (int i = 0; i < 6; ++i) labels[8 + i] = static_cast<char>(i);
  fuzz(labels, dir + "/t10k-labels-idx1-ubyte", 3, [&] {
    const LabelledImages data = load_fashion_mnist(dir, Split::kTest);
    ASSERT_EQ(data.labels.numel(), data.images.size(0));
    for (int64_t l : data.labels.to_vector<int64_t>()) {
      ASSERT_TRUE(l >= 0 && l < kFashionMnistClasses) << "label " << l << " let through";
    }
  });
}

TEST(ReadersFuzz, ImagesInAFolderDecodeOrFailWithTheirPath) {
  const std::string root = testing::temp_path("fuzz-folder");
  fs::create_directories(root + "/cls");
  cv::Mat picture(12, 9, CV_8UC3);
  cv::randu(picture, 0, 255);
  for (const std::string ext : {".png", ".jpg"}) {
    std::vector<uint8_t> encoded;
    ASSERT_TRUE(cv::imencode(ext, picture, encoded));
    const std::string path = root + "/cls/image" + ext;
    const ImageFolder folder_scan = [&] {
      testing::write_file(path, std::string(encoded.begin(), encoded.end()));
      return ImageFolder(root);
    }();
    std::mt19937 rng(0);
    std::vector<float> out(3 * 8 * 8);
    fuzz(std::string(encoded.begin(), encoded.end()), path, ext == ".png" ? 4 : 5, [&] {
      try {
        const Tensor image = folder_scan.image(0);
        ASSERT_EQ(image.dim(), 3);
        ASSERT_EQ(image.size(2), 3);
        transform_image(image, {.size = 8, .train = true, .mean = {0, 0, 0}, .std = {1, 1, 1}}, rng,
                        out.data());
      } catch (const CorruptSampleError& e) {
        ASSERT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        throw;
      }
    });
    fs::remove(path);
  }
}

}  // namespace
}  // namespace course
