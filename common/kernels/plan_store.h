// Library plans kept on disk between the processes of one command: a cuDNN graph's plan takes
// its heuristics and often a runtime compilation to build (tenths of a second a shape, seconds
// for a network), and a command that starts many runs (a GPU self-test, a sweep, a race) would
// otherwise pay that again in each. Off unless COURSE_PLAN_CACHE names a folder. An entry is the
// key's text and the plan's bytes with a checksum, written beside its place and renamed into it
// (ranks saving the same plan at once each leave a whole entry); one that is not whole, or that
// belongs to another key, reads as missing and is built again.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace course {

class PlanStore {
 public:
  // The folder (made if missing); throws Error when it cannot be one.
  explicit PlanStore(std::filesystem::path folder);

  // The store COURSE_PLAN_CACHE names, or none when it is unset or empty.
  static std::optional<PlanStore> named_by_environment();
  // The same, looked up once a process (null for none).
  static const PlanStore* from_environment();

  // The bytes saved under `key`, or nothing (never saved, or the entry is not whole).
  std::optional<std::string> load(std::string_view key) const;

  // Keeps `bytes` under `key`; false with `reason` set when it could not.
  bool save(std::string_view key, std::string_view bytes, std::string& reason) const;

  const std::filesystem::path& folder() const { return folder_; }
  std::filesystem::path entry_path(std::string_view key) const;

 private:
  std::filesystem::path folder_;
};

}  // namespace course
