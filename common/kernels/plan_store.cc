// The on-disk plan store (plan_store.h). An entry: "course-plan 1\n", the key's and the plan's
// sizes (u64), the key, the plan, and the CRC-32C of both (u32).
#include "common/kernels/plan_store.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <system_error>

#include "common/core/crc32c.h"
#include "common/core/error.h"

namespace course {

namespace {

constexpr std::string_view kMagic = "course-plan 1\n";

// FNV-1a, 64 bits: the entry's file name (a key's text is too long for one).
uint64_t fnv1a(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

void put_u64(std::string& out, uint64_t value) {
  for (int byte = 0; byte < 8; ++byte) out.push_back(static_cast<char>(value >> (8 * byte)));
}

uint64_t get_u64(std::string_view in) {
  uint64_t value = 0;
  for (int byte = 0; byte < 8; ++byte)
    value |= static_cast<uint64_t>(static_cast<unsigned char>(in[byte])) << (8 * byte);
  return value;
}

std::string entry_of(std::string_view key, std::string_view bytes) {
  std::string entry(kMagic);
  put_u64(entry, key.size());
  put_u64(entry, bytes.size());
  entry.append(key).append(bytes);
  const uint32_t crc = crc32c(std::string_view(entry).substr(kMagic.size()));
  for (int byte = 0; byte < 4; ++byte) entry.push_back(static_cast<char>(crc >> (8 * byte)));
  return entry;
}

// The plan's bytes in `entry` when it is whole and is `key`'s.
std::optional<std::string> plan_in(std::string_view entry, std::string_view key) {
  const size_t sizes = kMagic.size() + 16;
  if (entry.size() < sizes + 4 || entry.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  const uint64_t key_size = get_u64(entry.substr(kMagic.size()));
  const uint64_t plan_size = get_u64(entry.substr(kMagic.size() + 8));
  if (key_size != key.size() || entry.size() < sizes + 4 + key_size ||
      plan_size != entry.size() - sizes - 4 - key_size) {
    return std::nullopt;
  }
  const std::string_view body = entry.substr(kMagic.size(), entry.size() - kMagic.size() - 4);
  uint32_t crc = 0;
  for (int byte = 0; byte < 4; ++byte)
    crc |= static_cast<uint32_t>(static_cast<unsigned char>(entry[entry.size() - 4 + byte]))
           << (8 * byte);
  if (crc32c(body) != crc || entry.substr(sizes, key_size) != key) return std::nullopt;
  return std::string(entry.substr(sizes + key_size, plan_size));
}

}  // namespace

PlanStore::PlanStore(std::filesystem::path folder) : folder_(std::move(folder)) {
  std::error_code error;
  std::filesystem::create_directories(folder_, error);
  COURSE_CHECK(std::filesystem::is_directory(folder_), "COURSE_PLAN_CACHE: cannot keep plans in ",
               folder_.string(), " (", error ? error.message() : "not a folder", ")");
  COURSE_CHECK(::access(folder_.c_str(), W_OK) == 0, "COURSE_PLAN_CACHE: ", folder_.string(),
               " is not writable");
}

std::optional<PlanStore> PlanStore::named_by_environment() {
  const char* folder = std::getenv("COURSE_PLAN_CACHE");
  if (folder == nullptr || *folder == '\0') return std::nullopt;
  return PlanStore(folder);
}

const PlanStore* PlanStore::from_environment() {
  static const std::optional<PlanStore> store = named_by_environment();
  return store ? &*store : nullptr;
}

std::filesystem::path PlanStore::entry_path(std::string_view key) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.plan", static_cast<unsigned long long>(fnv1a(key)));
  return folder_ / name;
}

std::optional<std::string> PlanStore::load(std::string_view key) const {
  std::ifstream in(entry_path(key), std::ios::binary);
  if (!in) return std::nullopt;
  const std::string entry{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return plan_in(entry, key);
}

bool PlanStore::save(std::string_view key, std::string_view bytes, std::string& reason) const {
  static std::atomic<int> writes{0};
  const std::filesystem::path path = entry_path(key);
  const std::filesystem::path temp =
      path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(writes++);
  const std::string entry = entry_of(key, bytes);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(entry.data(), static_cast<std::streamsize>(entry.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      reason = "cannot write " + temp.string();
      return false;
    }
  }
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  if (error) {
    std::filesystem::remove(temp, error);
    reason = "cannot move " + temp.string() + " into place: " + error.message();
    return false;
  }
  return true;
}

}  // namespace course
