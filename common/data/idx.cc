// IDX reading through zlib (which also reads uncompressed files unchanged).
#include "common/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace course {

namespace {

constexpr uint8_t kU8Type = 0x08;
constexpr int kMaxDims = 4;
// Far beyond any IDX dataset; keeps the element count of four 32-bit sizes from overflowing.
constexpr int64_t kMaxElements = int64_t{1} << 36;
// The data is read in chunks of this size, so a header claiming more bytes than the file holds
// fails as truncated instead of allocating what it claims.
constexpr size_t kReadChunk = size_t{16} << 20;

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly `bytes` or fails with a message saying what was being read.
void read_exactly(gzFile file, void* out, size_t bytes, const std::string& path, const char* what) {
  char* cursor = static_cast<char*>(out);
  size_t remaining = bytes;
  while (remaining > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(remaining, 1u << 30));
    const int got = gzread(file, cursor, chunk);
    if (got <= 0) {
      int code = 0;
      const char* message = gzerror(file, &code);
      COURSE_FAIL(path, ": truncated or corrupt IDX file: ", what, " ended after ",
                  bytes - remaining, " of ", bytes, " bytes",
                  code != Z_OK && code != Z_STREAM_END ? std::string(" (") + message + ")" : "");
    }
    cursor += got;
    remaining -= static_cast<size_t>(got);
  }
}

}  // namespace

Tensor read_idx_u8(const std::string& path) {
  GzFile file(gzopen(path.c_str(), "rb"));
  COURSE_CHECK(file != nullptr, "cannot open ", path, ": ", std::strerror(errno));
  uint8_t magic[4];
  read_exactly(file.get(), magic, 4, path, "the header");
  COURSE_CHECK(magic[0] == 0 && magic[1] == 0 && magic[2] == kU8Type && magic[3] >= 1 &&
                   magic[3] <= kMaxDims,
               path, ": not an IDX file of unsigned bytes (magic ", int(magic[0]), " ",
               int(magic[1]), " ", int(magic[2]), " ", int(magic[3]), ")");
  Shape shape(magic[3]);
  int64_t count = 1;
  for (int64_t& dim : shape) {
    uint8_t be[4];
    read_exactly(file.get(), be, 4, path, "the header");
    dim = (int64_t{be[0]} << 24) | (int64_t{be[1]} << 16) | (int64_t{be[2]} << 8) | be[3];
    COURSE_CHECK(dim == 0 || count <= kMaxElements / dim, path, ": corrupt IDX header (sizes ",
                 shape_str(shape), " are beyond any dataset)");
    count *= dim;
  }
  std::vector<uint8_t> data;
  while (static_cast<int64_t>(data.size()) < count) {
    const size_t before = data.size();
    data.resize(before + std::min<size_t>(kReadChunk, static_cast<size_t>(count) - before));
    read_exactly(file.get(), data.data() + before, data.size() - before, path, "the data");
  }
  Tensor t = Tensor::empty_pinned(shape, DType::kU8);
  std::copy(data.begin(), data.end(), t.data_as<uint8_t>());
  return t;
}

}  // namespace course
