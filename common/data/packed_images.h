// A packed image file in the manner of FFCV's .beton: every sample's bytes (JPEG, or decoded
// pixels) inside fixed-size pages, the file memory-mapped, an index at the end. No sample
// straddles a page, so an epoch read in a quasi-random page order (quasi_random_order) touches
// a few pages at a time instead of the whole file. Layout, little-endian:
//   page 0: the header (magic "CRSPACK1", version, encoding, page size, samples, classes,
//           height, width, channels, index offset)
//   pages 1...: samples, each starting and ending inside one page
//   index: per sample its offset, size and label (24 bytes)
// The writer writes `<path>.tmp` and renames it when finished, so a file is whole or absent.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/data/dataset.h"

namespace course {

enum class PackedEncoding : uint32_t { kJpeg = 0, kPixels = 1 };

struct PackedLayout {
  PackedEncoding encoding = PackedEncoding::kJpeg;
  int64_t page_size = 8 << 20;  // FFCV's default; a power of two, at least 4 KiB
  int64_t classes = 0;
  int64_t height = 0, width = 0, channels = 0;  // the images' shape (all alike for kPixels)
};

class PackedWriter {
 public:
  // Throws on a page size that is not a power of two of at least 4 KiB or an unwritable path.
  PackedWriter(std::string path, const PackedLayout& layout);
  ~PackedWriter();  // without finish(): the temporary file is removed
  PackedWriter(const PackedWriter&) = delete;
  PackedWriter& operator=(const PackedWriter&) = delete;

  // A sample's bytes (JPEG; or H x W x C pixels for kPixels) with its label in [0, classes).
  void add(const std::vector<uint8_t>& bytes, int64_t label);
  void finish();  // writes the index and header, then renames the file into place

 private:
  std::string path_;
  PackedLayout layout_;
  std::FILE* file_ = nullptr;
  int64_t position_ = 0;
  std::vector<int64_t> index_;  // offset, size, label per sample
};

class PackedImages : public Dataset {
 public:
  // Maps `path`; throws naming it on a bad magic, version, header or index (an offset or size
  // outside the file, a sample across a page boundary, a label out of range).
  explicit PackedImages(const std::string& path);
  ~PackedImages() override;
  PackedImages(const PackedImages&) = delete;
  PackedImages& operator=(const PackedImages&) = delete;

  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  int64_t channels() const override { return layout_.channels; }
  int64_t num_classes() const override { return layout_.classes; }
  int64_t label(int64_t index) const override { return labels_[index]; }
  Tensor image(int64_t index) const override;
  std::optional<Encoded> encoded(int64_t index) const override;  // with JPEG bytes
  bool stores_encoded() const override { return layout_.encoding == PackedEncoding::kJpeg; }

  const PackedLayout& layout() const { return layout_; }
  // The page each sample lies in, for quasi_random_order.
  const std::vector<int64_t>& sample_pages() const { return pages_; }

 private:
  std::string path_;
  PackedLayout layout_;
  const uint8_t* map_ = nullptr;
  int64_t map_size_ = 0;
  std::vector<int64_t> offsets_, sizes_, labels_, pages_;
};

// FFCV's quasi-random order: the pages shuffled, then taken `pages_in_memory` at a time, the
// samples of each group of pages shuffled together; a permutation of the samples, so reading it
// keeps about `pages_in_memory` pages in use. sample_pages[i] is sample i's page.
std::vector<int64_t> quasi_random_order(const std::vector<int64_t>& sample_pages,
                                        int64_t pages_in_memory, uint32_t seed, int64_t epoch);

}  // namespace course
