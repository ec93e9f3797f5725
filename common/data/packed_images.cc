// Writing and memory-mapping packed image files, and their quasi-random order.
#include "common/data/packed_images.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>

#include "common/core/error.h"

namespace course {

namespace {

constexpr char kMagic[8] = {'C', 'R', 'S', 'P', 'A', 'C', 'K', '1'};
constexpr uint32_t kVersion = 1;

struct Header {
  char magic[8];
  uint32_t version, encoding;
  int64_t page_size, samples, classes, height, width, channels, index_offset;
};

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

PackedWriter::PackedWriter(std::string path, const PackedLayout& layout)
    : path_(std::move(path)), layout_(layout) {
  COURSE_CHECK(power_of_two(layout.page_size) && layout.page_size >= 4096,
               "a packed file's page size must be a power of two of at least 4096 bytes, got ",
               layout.page_size);
  COURSE_CHECK(layout.classes > 0, "a packed file needs its number of classes");
  file_ = std::fopen((path_ + ".tmp").c_str(), "wb");
  COURSE_CHECK(file_ != nullptr, "cannot write ", path_, ".tmp: ", std::strerror(errno));
  position_ = layout.page_size;  // page 0 is the header's
}

PackedWriter::~PackedWriter() {
  if (file_ == nullptr) return;
  std::fclose(file_);
  std::remove((path_ + ".tmp").c_str());
}

void PackedWriter::add(const std::vector<uint8_t>& bytes, int64_t label) {
  COURSE_CHECK(file_ != nullptr, "packed file ", path_, " is already finished");
  const int64_t size = static_cast<int64_t>(bytes.size());
  COURSE_CHECK(size > 0 && size <= layout_.page_size, "a sample of ", size,
               " bytes does not fit a page of ", layout_.page_size, " bytes: use a larger page");
  COURSE_CHECK(label >= 0 && label < layout_.classes, "label ", label, " is not in [0, ",
               layout_.classes, ")");
  const int64_t page_end = (position_ / layout_.page_size + 1) * layout_.page_size;
  if (position_ + size > page_end) position_ = page_end;  // start the next page
  COURSE_CHECK(std::fseek(file_, position_, SEEK_SET) == 0 &&
                   std::fwrite(bytes.data(), 1, bytes.size(), file_) == bytes.size(),
               "cannot write ", path_, ".tmp: ", std::strerror(errno));
  index_.insert(index_.end(), {position_, size, label});
  position_ += size;
}

void PackedWriter::finish() {
  COURSE_CHECK(file_ != nullptr, "packed file ", path_, " is already finished");
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.encoding = static_cast<uint32_t>(layout_.encoding);
  h.page_size = layout_.page_size;
  h.samples = static_cast<int64_t>(index_.size() / 3);
  h.classes = layout_.classes;
  h.height = layout_.height;
  h.width = layout_.width;
  h.channels = layout_.channels;
  position_ = (position_ + 7) / 8 * 8;  // the index's integers aligned
  h.index_offset = position_;
  const bool written =
      std::fseek(file_, position_, SEEK_SET) == 0 &&
      std::fwrite(index_.data(), sizeof(int64_t), index_.size(), file_) == index_.size() &&
      std::fseek(file_, 0, SEEK_SET) == 0 && std::fwrite(&h, sizeof h, 1, file_) == 1;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  COURSE_CHECK(written && closed, "cannot write ", path_, ".tmp: ", std::strerror(errno));
  std::error_code error;
  std::filesystem::rename(path_ + ".tmp", path_, error);
  COURSE_CHECK(!error, "cannot rename ", path_, ".tmp: ", error.message());
}

PackedImages::PackedImages(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  COURSE_CHECK(fd >= 0, "packed file ", path, " cannot be opened: ", std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  map_size_ = st.st_size;
  if (map_size_ >= static_cast<int64_t>(sizeof(Header))) {
    void* map = ::mmap(nullptr, map_size_, PROT_READ, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) map_ = static_cast<const uint8_t*>(map);
  }
  ::close(fd);
  const auto bad = [&](const std::string& why) {
    return "packed file " + path + " is not valid: " + why;
  };
  COURSE_CHECK(map_ != nullptr, bad("too short for its header"));
  Header h;
  std::memcpy(&h, map_, sizeof h);
  COURSE_CHECK(std::memcmp(h.magic, kMagic, sizeof kMagic) == 0,
               bad("bad magic (not a packed file)"));
  COURSE_CHECK(h.version == kVersion, bad("version " + std::to_string(h.version) + ", expected 1"));
  COURSE_CHECK(h.encoding <= 1 && power_of_two(h.page_size) && h.page_size >= 4096 &&
                   h.classes > 0 && h.samples >= 0 && h.channels >= 0 && h.channels <= 4,
               bad("bad header"));
  COURSE_CHECK(h.index_offset >= h.page_size && h.samples <= (map_size_ - h.index_offset) / 24 &&
                   h.index_offset + h.samples * 24 == map_size_,
               bad("the index does not fit the file (truncated?)"));
  layout_ = {static_cast<PackedEncoding>(h.encoding),
             h.page_size,
             h.classes,
             h.height,
             h.width,
             h.channels};
  for (int64_t i = 0; i < h.samples; ++i) {
    int64_t entry[3];  // copied out: another writer's index need not be 8-byte aligned
    std::memcpy(entry, map_ + h.index_offset + 24 * i, sizeof entry);
    const int64_t offset = entry[0], size = entry[1], label = entry[2];
    const std::string which = "sample " + std::to_string(i);
    COURSE_CHECK(offset >= h.page_size && size > 0 && offset + size <= h.index_offset,
                 bad(which + " lies outside the data pages"));
    COURSE_CHECK(offset / h.page_size == (offset + size - 1) / h.page_size,
                 bad(which + " straddles a page boundary"));
    COURSE_CHECK(label >= 0 && label < h.classes,
                 bad(which + "'s label " + std::to_string(label) + " is not in [0, " +
                     std::to_string(h.classes) + ")"));
    COURSE_CHECK(layout_.encoding == PackedEncoding::kJpeg ||
                     size == layout_.height * layout_.width * layout_.channels,
                 bad(which + " is not a whole image of the header's shape"));
    offsets_.push_back(offset);
    sizes_.push_back(size);
    labels_.push_back(label);
    pages_.push_back(offset / h.page_size);
  }
}

PackedImages::~PackedImages() {
  if (map_ != nullptr) ::munmap(const_cast<uint8_t*>(map_), map_size_);
}

std::optional<Dataset::Encoded> PackedImages::encoded(int64_t index) const {
  if (layout_.encoding != PackedEncoding::kJpeg) return std::nullopt;
  const uint8_t* bytes = map_ + offsets_[index];
  return Encoded{{bytes, bytes + sizes_[index]},
                 "packed file " + path_ + ": sample " + std::to_string(index)};
}

Tensor PackedImages::image(int64_t index) const {
  const uint8_t* bytes = map_ + offsets_[index];
  const int64_t c = layout_.channels;
  if (layout_.encoding == PackedEncoding::kPixels) {
    Tensor out = Tensor::empty({layout_.height, layout_.width, c}, DType::kU8);
    std::memcpy(out.data(), bytes, sizes_[index]);
    return out;
  }
  const cv::Mat encoded(1, static_cast<int>(sizes_[index]), CV_8U, const_cast<uint8_t*>(bytes));
  const cv::Mat decoded = cv::imdecode(encoded, c == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
  if (decoded.empty()) {
    throw CorruptSampleError("packed file " + path_ + ": sample " + std::to_string(index) +
                             " is not a decodable JPEG");
  }
  Tensor out = Tensor::empty({decoded.rows, decoded.cols, c}, DType::kU8);
  cv::Mat view(decoded.rows, decoded.cols, CV_8UC(static_cast<int>(c)), out.data());
  if (c == 3) {
    cv::cvtColor(decoded, view, cv::COLOR_BGR2RGB);
  } else {
    decoded.copyTo(view);
  }
  return out;
}

std::vector<int64_t> quasi_random_order(const std::vector<int64_t>& sample_pages,
                                        int64_t pages_in_memory, uint32_t seed, int64_t epoch) {
  COURSE_CHECK(pages_in_memory > 0, "the quasi-random order needs at least one page in memory");
  std::map<int64_t, std::vector<int64_t>> by_page;
  for (int64_t i = 0; i < static_cast<int64_t>(sample_pages.size()); ++i) {
    by_page[sample_pages[i]].push_back(i);
  }
  std::vector<int64_t> pages;
  for (const auto& [page, samples] : by_page) pages.push_back(page);
  std::seed_seq seeds{seed, static_cast<uint32_t>(epoch), 0x9a9e5u};
  std::mt19937 rng(seeds);
  std::shuffle(pages.begin(), pages.end(), rng);
  std::vector<int64_t> order;
  for (size_t first = 0; first < pages.size(); first += pages_in_memory) {
    const size_t group_start = order.size();
    for (size_t p = first; p < std::min(pages.size(), first + pages_in_memory); ++p) {
      const std::vector<int64_t>& samples = by_page[pages[p]];
      order.insert(order.end(), samples.begin(), samples.end());
    }
    std::shuffle(order.begin() + group_start, order.end(), rng);
  }
  return order;
}

}  // namespace course
