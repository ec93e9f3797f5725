// Atomic checkpoint files.
#include "common/train/checkpoint.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/kernels/elementwise.h"

namespace course::train {

namespace {

constexpr char kMagic[] = "COURSE-CKPT-1\n";

class File {
 public:
  File(const std::string& path, const char* mode)
      : path_(path), f_(std::fopen(path.c_str(), mode)) {
    COURSE_CHECK(f_ != nullptr, "cannot open checkpoint ", path, ": ", std::strerror(errno));
  }
  ~File() {
    if (f_) std::fclose(f_);
  }
  void write(const void* data, size_t bytes) {
    COURSE_CHECK(std::fwrite(data, 1, bytes, f_) == bytes, "writing checkpoint ", path_, ": ",
                 std::strerror(errno));
  }
  void read(void* data, size_t bytes) {
    COURSE_CHECK(std::fread(data, 1, bytes, f_) == bytes, "checkpoint ", path_,
                 " is truncated or corrupt");
  }
  void skip(uint64_t bytes) {
    COURSE_CHECK(
        bytes < (uint64_t{1} << 62) && std::fseek(f_, static_cast<long>(bytes), SEEK_CUR) == 0,
        "checkpoint ", path_, " is truncated or corrupt");
  }
  template <class T>
  void put(T value) {
    write(&value, sizeof value);
  }
  template <class T>
  T get() {
    T value;
    read(&value, sizeof value);
    return value;
  }
  void commit() {  // flush to the disk before the rename makes the file visible
    COURSE_CHECK(std::fflush(f_) == 0 && fsync(fileno(f_)) == 0, "flushing checkpoint ", path_,
                 ": ", std::strerror(errno));
    std::fclose(f_);
    f_ = nullptr;
  }

 private:
  std::string path_;
  FILE* f_;
};

}  // namespace

bool is_checkpoint_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof kMagic - 1] = {};
  return in.read(magic, sizeof magic) && std::memcmp(magic, kMagic, sizeof magic) == 0;
}

void check_overwritable(const std::string& what, const std::string& path) {
  std::error_code error;
  // An empty file (mktemp's) holds nothing to lose.
  const bool holds_something =
      std::filesystem::exists(path, error) && std::filesystem::file_size(path, error) > 0 && !error;
  COURSE_CHECK(!holds_something || is_checkpoint_file(path), what, " ", path,
               " is a file that is not a checkpoint: it is left as it is; name another file");
}

void save_checkpoint(const std::string& path, const NamedTensors& tensors,
                     const nlohmann::json& header) {
  check_overwritable("checkpoint", path);
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  try {
    File f(temp, "wb");
    f.write(kMagic, sizeof kMagic - 1);
    const std::string text = header.dump();
    f.put<uint64_t>(text.size());
    f.write(text.data(), text.size());
    f.put<uint64_t>(tensors.size());
    for (const auto& [name, tensor] : tensors) {
      const Tensor host = tensor->to(Device::cpu());
      f.put<uint32_t>(static_cast<uint32_t>(name.size()));
      f.write(name.data(), name.size());
      f.put<uint8_t>(static_cast<uint8_t>(tensor->dtype()));
      f.put<uint8_t>(static_cast<uint8_t>(tensor->dim()));
      for (int64_t d : tensor->shape()) f.put<int64_t>(d);
      f.put<uint64_t>(host.nbytes());
      f.write(host.data(), host.nbytes());
    }
    f.commit();
  } catch (...) {
    std::remove(temp.c_str());
    throw;
  }
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  COURSE_CHECK(!error, "cannot move checkpoint into place at ", path, ": ", error.message());
}

namespace {

// The magic line and the JSON header, leaving `f` at the tensor count.
nlohmann::json read_header(File& f, const std::string& path) {
  char magic[sizeof kMagic - 1];
  f.read(magic, sizeof magic);
  COURSE_CHECK(std::memcmp(magic, kMagic, sizeof magic) == 0, path, " is not a checkpoint");
  const auto header_size = f.get<uint64_t>();
  COURSE_CHECK(header_size < (1u << 24), "checkpoint ", path, " is corrupt (header size)");
  std::string text(header_size, '\0');
  f.read(text.data(), header_size);
  nlohmann::json header = nlohmann::json::parse(text, nullptr, false);
  COURSE_CHECK(!header.is_discarded() && (header.is_object() || header.is_null()), "checkpoint ",
               path, " is corrupt (header)");
  return header.is_null() ? nlohmann::json::object() : header;
}

}  // namespace

nlohmann::json read_checkpoint_header(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    const std::optional<int> ranks = sharded_ranks(path);
    COURSE_CHECK(!ranks, "checkpoint ", path, " was saved sharded, one file per rank on ", *ranks,
                 " ranks (", rank_file(path, 0, *ranks), " ...): resume it on ", *ranks,
                 " ranks with the sharding it was saved with");
  }
  File f(path, "rb");
  return read_header(f, path);
}

nlohmann::json load_checkpoint(const std::string& path, const NamedTensors& tensors,
                               bool skip_others) {
  File f(path, "rb");
  const nlohmann::json header = read_header(f, path);
  std::map<std::string, Tensor*> wanted(tensors.begin(), tensors.end());
  const auto count = f.get<uint64_t>();
  for (uint64_t i = 0; i < count; ++i) {
    const auto name_size = f.get<uint32_t>();
    COURSE_CHECK(name_size < 4096, "checkpoint ", path, " is corrupt (name size)");
    std::string name(name_size, '\0');
    f.read(name.data(), name_size);
    const auto dtype = static_cast<DType>(f.get<uint8_t>());
    Shape shape(f.get<uint8_t>());
    for (int64_t& d : shape) d = f.get<int64_t>();
    const auto bytes = f.get<uint64_t>();
    auto it = wanted.find(name);
    if (it == wanted.end() && skip_others) {
      f.skip(bytes);
      continue;
    }
    COURSE_CHECK(it != wanted.end(), "checkpoint ", path, " holds '", name,
                 "', which this model does not have (a different model or configuration?)");
    Tensor& target = *it->second;
    COURSE_CHECK(target.dtype() == dtype && target.shape() == shape && target.nbytes() == bytes,
                 "checkpoint ", path, ": '", name, "' is ", shape_str(shape), ", the model has ",
                 shape_str(target.shape()));
    Tensor host = Tensor::empty(shape, dtype);
    f.read(host.data(), bytes);
    copy_(target, host.to(target.device()));
    wanted.erase(it);
  }
  COURSE_CHECK(wanted.empty(), "checkpoint ", path, " lacks '", wanted.begin()->first, "'");
  return header;
}

namespace {

// `path` split where a rank's tag goes: before its extension, kept as the suffix.
std::pair<std::filesystem::path, std::string> stem_and_suffix(const std::string& path) {
  const std::filesystem::path given(path);
  if (!given.has_extension()) return {given, ""};
  return {given.parent_path() / given.stem(), given.extension().string()};
}

}  // namespace

std::string rank_file(const std::string& path, int rank, int ranks) {
  const auto [stem, suffix] = stem_and_suffix(path);
  return stem.string() + ".rank" + std::to_string(rank) + "-of-" + std::to_string(ranks) + suffix;
}

std::optional<int> sharded_ranks(const std::string& path) {
  const auto [stem, suffix] = stem_and_suffix(path);
  const std::string prefix = stem.filename().string() + ".rank0-of-";
  const std::filesystem::path folder = stem.has_parent_path() ? stem.parent_path() : ".";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
        !name.ends_with(suffix)) {
      continue;
    }
    const std::string count =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (count.find_first_not_of("0123456789") == std::string::npos) return std::stoi(count);
  }
  return std::nullopt;
}

nlohmann::json with_rank_header(nlohmann::json header, int rank, int ranks) {
  header["sharded"] = {{"rank", rank}, {"ranks", ranks}};
  return header;
}

nlohmann::json read_rank_file_header(const std::string& path, int rank, int ranks) {
  const std::string file = rank_file(path, rank, ranks);
  std::error_code error;
  if (!std::filesystem::exists(file, error)) {
    const std::optional<int> saved_on = sharded_ranks(path);
    COURSE_CHECK(!saved_on || *saved_on == ranks, "sharded checkpoint ", path, " was saved on ",
                 *saved_on, " ranks, and this run has ", ranks, ": resume it on ", *saved_on,
                 " ranks");
    COURSE_CHECK(!std::filesystem::exists(path, error), "checkpoint ", path,
                 " holds one process's state, not a file per rank: this run shards its state "
                 "over ranks, so resume it with the settings it was saved with");
    COURSE_FAIL("sharded checkpoint ", path, ": ", file, " is missing");
  }
  const nlohmann::json header = read_checkpoint_header(file);
  COURSE_CHECK(header.contains("sharded") && header["sharded"].value("rank", -1) == rank &&
                   header["sharded"].value("ranks", -1) == ranks,
               file, " is not rank ", rank, " of a sharded checkpoint on ", ranks, " ranks");
  return header;
}

}  // namespace course::train
