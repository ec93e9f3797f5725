// Tar shards through libarchive: the writer, the index of a shard, the grouping into samples,
// and reads by offset.
#include "common/data/tar_shards.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>

namespace course {

namespace {

namespace fs = std::filesystem;

int64_t padded(int64_t size) { return (size + 511) / 512 * 512; }

// A shard opened for reads at given offsets (pread: safe from several threads).
class ShardFile {
 public:
  explicit ShardFile(std::string path)
      : path_(std::move(path)), fd_(::open(path_.c_str(), O_RDONLY)) {}
  ~ShardFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  ShardFile(const ShardFile&) = delete;
  ShardFile& operator=(const ShardFile&) = delete;

  std::vector<uint8_t> read(int64_t offset, int64_t size) const {
    std::vector<uint8_t> bytes(size);
    if (fd_ < 0 || ::pread(fd_, bytes.data(), size, offset) != size) {
      throw CorruptSampleError("shard " + path_ + ": cannot read a member's bytes");
    }
    return bytes;
  }

 private:
  std::string path_;
  int fd_;
};

int64_t parse_class(const std::string& text, const std::string& where) {
  size_t used = 0;
  int64_t value = -1;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  while (used < text.size() && std::isspace(static_cast<unsigned char>(text[used]))) ++used;
  if (used == 0 || used != text.size() || value < 0) {
    throw ShardError(where + ": the .cls member '" + text + "' is not a class id");
  }
  return value;
}

}  // namespace

std::vector<TarMember> list_tar_members(const std::string& path) {
  archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  std::vector<TarMember> members;
  std::vector<int64_t> header_positions;
  std::string failure;
  if (archive_read_open_filename(a, path.c_str(), 1 << 16) != ARCHIVE_OK) {
    failure = archive_error_string(a) ? archive_error_string(a) : "cannot open";
  } else {
    archive_entry* entry = nullptr;
    int status;
    while ((status = archive_read_next_header(a, &entry)) == ARCHIVE_OK) {
      header_positions.push_back(archive_read_header_position(a));
      const bool regular = archive_entry_filetype(entry) == AE_IFREG;
      members.push_back(
          {archive_entry_pathname(entry), regular ? 0 : -1, archive_entry_size(entry)});
      if (archive_read_data_skip(a) != ARCHIVE_OK) {
        status = ARCHIVE_FATAL;
        break;
      }
    }
    if (status != ARCHIVE_EOF) {
      failure = archive_error_string(a) ? archive_error_string(a) : "unreadable";
    }
    header_positions.push_back(archive_read_header_position(a));  // the end of the last member
  }
  archive_read_free(a);
  if (!failure.empty() || members.empty()) {
    throw ShardError("shard " + path +
                     " is not a whole tar archive: " + (failure.empty() ? "no members" : failure));
  }
  // A member's data ends, padded to 512 bytes, where the next member's headers begin.
  std::vector<TarMember> regular;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].offset < 0) continue;
    members[i].offset = header_positions[i + 1] - padded(members[i].size);
    regular.push_back(members[i]);
  }
  return regular;
}

std::vector<TarSample> group_tar_members(const std::vector<TarMember>& members) {
  std::vector<TarSample> samples;
  for (const TarMember& m : members) {
    const size_t slash = m.name.rfind('/');
    const size_t dot = m.name.find('.', slash == std::string::npos ? 0 : slash + 1);
    const std::string key = m.name.substr(0, dot);
    const std::string extension = dot == std::string::npos ? "" : m.name.substr(dot + 1);
    if (samples.empty() || samples.back().key != key) samples.push_back({key, {}});
    samples.back().parts[extension] = m;
  }
  return samples;
}

TarShardWriter::TarShardWriter(std::string dir, std::string prefix, int64_t max_samples,
                               int64_t max_bytes)
    : dir_(std::move(dir)),
      prefix_(std::move(prefix)),
      max_samples_(max_samples),
      max_bytes_(max_bytes) {
  COURSE_CHECK(max_samples > 0 && max_bytes > 0, "a shard must hold at least one sample");
  std::error_code error;
  COURSE_CHECK(fs::is_directory(dir_, error), "shard folder ", dir_, " does not exist");
}

TarShardWriter::~TarShardWriter() {
  if (archive_ == nullptr) return;
  archive_write_free(archive_);
  std::remove(open_path_.c_str());
}

void TarShardWriter::add(const std::string& key, const std::vector<uint8_t>& jpeg, int64_t label) {
  if (archive_ != nullptr &&
      (samples_in_shard_ >= max_samples_ || bytes_in_shard_ + padded(jpeg.size()) > max_bytes_)) {
    close_shard();
  }
  if (archive_ == nullptr) {
    char name[64];
    std::snprintf(name, sizeof name, "%s-%06lld.tar", prefix_.c_str(),
                  static_cast<long long>(shard_));
    open_path_ = (fs::path(dir_) / name).string() + ".tmp";
    archive_ = archive_write_new();
    archive_write_set_format_pax_restricted(archive_);
    COURSE_CHECK(archive_write_open_filename(archive_, open_path_.c_str()) == ARCHIVE_OK,
                 "cannot write shard ", open_path_, ": ", archive_error_string(archive_));
  }
  const std::string cls = std::to_string(label);
  for (const auto& [extension, data, size] :
       {std::tuple<const char*, const void*, size_t>{"jpg", jpeg.data(), jpeg.size()},
        {"cls", cls.data(), cls.size()}}) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, (key + "." + extension).c_str());
    archive_entry_set_size(entry, static_cast<la_int64_t>(size));
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    const bool ok = archive_write_header(archive_, entry) == ARCHIVE_OK &&
                    archive_write_data(archive_, data, size) == static_cast<la_ssize_t>(size);
    archive_entry_free(entry);
    COURSE_CHECK(ok, "cannot write shard ", open_path_, ": ", archive_error_string(archive_));
    bytes_in_shard_ += 512 + padded(static_cast<int64_t>(size));
  }
  ++samples_in_shard_;
}

void TarShardWriter::close_shard() {
  const bool ok = archive_write_close(archive_) == ARCHIVE_OK;
  archive_write_free(archive_);
  archive_ = nullptr;
  COURSE_CHECK(ok, "cannot finish shard ", open_path_);
  const std::string final_path = open_path_.substr(0, open_path_.size() - 4);
  std::error_code error;
  fs::rename(open_path_, final_path, error);
  COURSE_CHECK(!error, "cannot rename shard ", open_path_, ": ", error.message());
  ++shard_;
  samples_in_shard_ = bytes_in_shard_ = 0;
}

void TarShardWriter::finish() {
  if (archive_ != nullptr) close_shard();
}

TarShards::TarShards(const std::string& dir, int64_t classes, bool skip_corrupt,
                     const TarGrouper& group) {
  std::error_code error;
  COURSE_CHECK(fs::is_directory(dir, error), "shard folder ", dir, " does not exist");
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".tar") shards_.push_back(entry.path().string());
  }
  std::sort(shards_.begin(), shards_.end());
  COURSE_CHECK(!shards_.empty(), "shard folder ", dir, " holds no .tar shards");
  int64_t largest = -1;
  for (size_t s = 0; s < shards_.size(); ++s) {
    int64_t in_shard = 0;
    const ShardFile file(shards_[s]);
    for (const TarSample& sample : group(list_tar_members(shards_[s]))) {
      const std::string where = "shard " + shards_[s] + ", sample '" + sample.key + "'";
      try {
        const auto image = sample.parts.find("jpg");
        const auto cls = sample.parts.find("cls");
        if (image == sample.parts.end() || cls == sample.parts.end()) {
          throw ShardError(where + " has no ." + (image == sample.parts.end() ? "jpg" : "cls") +
                           " member (each sample needs both)");
        }
        const std::vector<uint8_t> text = file.read(cls->second.offset, cls->second.size);
        const int64_t label = parse_class(std::string(text.begin(), text.end()), where);
        if (classes > 0 && label >= classes) {
          throw ShardError(where + ": class " + std::to_string(label) + " is not in [0, " +
                           std::to_string(classes) + ")");
        }
        samples_.push_back(
            {static_cast<int64_t>(s), image->second.offset, image->second.size, label});
        largest = std::max(largest, label);
        ++in_shard;
      } catch (const Error& e) {
        if (!skip_corrupt) throw;
        std::fprintf(stderr, "skipped: %s\n", e.what());
        ++skipped_;
      }
    }
    shard_sizes_.push_back(in_shard);
  }
  COURSE_CHECK(!samples_.empty(), "shard folder ", dir, " holds no complete sample");
  classes_ = classes > 0 ? classes : largest + 1;
  channels_ = image(0).size(2);
}

std::optional<Dataset::Encoded> TarShards::encoded(int64_t index) const {
  const Sample& s = samples_[index];
  return Encoded{ShardFile(shards_[s.shard]).read(s.offset, s.size),
                 "shard " + shards_[s.shard] + ": sample " + std::to_string(index)};
}

Tensor TarShards::image(int64_t index) const {
  const Sample& s = samples_[index];
  const std::vector<uint8_t> bytes = ShardFile(shards_[s.shard]).read(s.offset, s.size);
  const cv::Mat decoded = cv::imdecode(bytes, cv::IMREAD_UNCHANGED);
  if (decoded.empty() || decoded.depth() != CV_8U ||
      (decoded.channels() != 1 && decoded.channels() != 3)) {
    throw CorruptSampleError("shard " + shards_[s.shard] + ": sample " + std::to_string(index) +
                             " is not an 8-bit grey or colour image");
  }
  const int c = channels_ > 0 ? static_cast<int>(channels_) : decoded.channels();
  Tensor out = Tensor::empty({decoded.rows, decoded.cols, c}, DType::kU8);
  cv::Mat view(decoded.rows, decoded.cols, CV_8UC(c), out.data());
  if (decoded.channels() == c) {
    if (c == 3)
      cv::cvtColor(decoded, view, cv::COLOR_BGR2RGB);
    else
      decoded.copyTo(view);
  } else {
    cv::cvtColor(decoded, view, c == 3 ? cv::COLOR_GRAY2RGB : cv::COLOR_BGR2GRAY);
  }
  return out;
}

std::vector<int64_t> webdataset_order(const std::vector<int64_t>& shard_sizes, int64_t buffer,
                                      uint32_t seed, int64_t epoch) {
  COURSE_CHECK(buffer > 0, "the shuffle buffer must hold at least one sample");
  std::vector<int64_t> first(shard_sizes.size() + 1, 0);
  for (size_t s = 0; s < shard_sizes.size(); ++s) first[s + 1] = first[s] + shard_sizes[s];
  std::vector<size_t> shards(shard_sizes.size());
  for (size_t s = 0; s < shards.size(); ++s) shards[s] = s;
  std::seed_seq seeds{seed, static_cast<uint32_t>(epoch), 0x7a25u};
  std::mt19937 rng(seeds);
  std::shuffle(shards.begin(), shards.end(), rng);
  std::vector<int64_t> held, order;
  for (const size_t s : shards) {
    for (int64_t i = first[s]; i < first[s + 1]; ++i) {
      if (static_cast<int64_t>(held.size()) < buffer) {
        held.push_back(i);
        continue;
      }
      const size_t pick = std::uniform_int_distribution<size_t>(0, held.size() - 1)(rng);
      order.push_back(held[pick]);
      held[pick] = i;
    }
  }
  std::shuffle(held.begin(), held.end(), rng);
  order.insert(order.end(), held.begin(), held.end());
  return order;
}

}  // namespace course
