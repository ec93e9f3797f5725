// Reading CIFAR-10's binary batches into memory.
#include "common/data/cifar10.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "common/core/error.h"

namespace course {

namespace {

namespace fs = std::filesystem;

constexpr int64_t kPixels = 3 * 32 * 32, kRecord = 1 + kPixels;

std::vector<uint8_t> read_records(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  COURSE_CHECK(in.good(), "CIFAR-10 file ", file.string(), " is missing or unreadable");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  COURSE_CHECK(!bytes.empty() && bytes.size() % kRecord == 0, "CIFAR-10 file ", file.string(),
               " has ", bytes.size(), " bytes, not a whole number of ", kRecord,
               "-byte records (truncated?)");
  return bytes;
}

}  // namespace

bool holds_cifar10(const std::string& dir) {
  return fs::exists(fs::path(dir) / "data_batch_1.bin");
}

LabelledImages load_cifar10(const std::string& dir, Split split) {
  std::vector<fs::path> files;
  if (split == Split::kTest) {
    files.push_back(fs::path(dir) / "test_batch.bin");
  } else {
    for (int b = 1; b <= 5; ++b)
      files.push_back(fs::path(dir) / ("data_batch_" + std::to_string(b) + ".bin"));
  }
  std::vector<std::vector<uint8_t>> contents;
  int64_t n = 0;
  for (const fs::path& f : files) {
    contents.push_back(read_records(f));
    n += static_cast<int64_t>(contents.back().size()) / kRecord;
  }
  LabelledImages out{Tensor::empty({n, 3, 32, 32}, DType::kU8), Tensor::empty({n}, DType::kI64)};
  uint8_t* pixels = out.images.data_as<uint8_t>();
  int64_t* labels = out.labels.data_as<int64_t>();
  int64_t i = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const std::vector<uint8_t>& bytes = contents[f];
    for (size_t r = 0; r < bytes.size(); r += kRecord, ++i) {
      COURSE_CHECK(bytes[r] < kCifar10Classes, "CIFAR-10 file ", files[f].string(), ", record ",
                   r / kRecord, ": label ", static_cast<int>(bytes[r]), " is not in [0, 10)");
      labels[i] = bytes[r];
      std::memcpy(pixels + i * kPixels, bytes.data() + r + 1, kPixels);
    }
  }
  return out;
}

}  // namespace course
