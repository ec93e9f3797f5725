// The on-disk plan store (plan_store.h): what it saves it loads back byte for byte, under its key
// only; an entry cut short, altered or another key's reads as missing; writers racing on one key
// leave a whole entry; a folder it cannot use is one clear error.
#include "common/kernels/plan_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "common/testing/errors_and_files.h"

namespace course {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::temp_path;

std::string binary_bytes(size_t size, int seed) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + seed * 7) % 256);
  return bytes;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

fs::path fresh_folder(const std::string& name) {
  const fs::path folder = temp_path(name);
  fs::remove_all(folder);
  return folder;
}

TEST(PlanStore, LoadsBackWhatItSavedUnderItsKeyOnly) {
  const PlanStore store(fresh_folder("plans_round_trip") / "made/if/missing");
  std::string reason;
  const std::string plan = binary_bytes(1000, 1), other = binary_bytes(3, 2);
  ASSERT_TRUE(store.save("cuDNN 9 / batch norm 8x37", plan, reason)) << reason;
  ASSERT_TRUE(store.save("cuDNN 9 / batch norm 8x38", other, reason)) << reason;
  ASSERT_TRUE(store.save("empty", "", reason)) << reason;
  EXPECT_EQ(store.load("cuDNN 9 / batch norm 8x37"), plan);
  EXPECT_EQ(store.load("cuDNN 9 / batch norm 8x38"), other);
  EXPECT_EQ(store.load("empty"), "");
  EXPECT_EQ(store.load("cuDNN 9 / batch norm 8x3"), std::nullopt);
  // A later save replaces the entry, and no temporary file is left beside the entries.
  ASSERT_TRUE(store.save("cuDNN 9 / batch norm 8x37", other, reason)) << reason;
  EXPECT_EQ(store.load("cuDNN 9 / batch norm 8x37"), other);
  EXPECT_EQ(std::distance(fs::directory_iterator(store.folder()), fs::directory_iterator()), 3);
}

TEST(PlanStore, AnEntryNotWholeOrAnotherKeysReadsAsMissing) {
  const PlanStore store(fresh_folder("plans_damaged"));
  std::string reason;
  const std::string key = "flash attention 4 x 12 x 1024 x 64, bf16";
  ASSERT_TRUE(store.save(key, binary_bytes(64, 3), reason)) << reason;
  const fs::path path = store.entry_path(key);
  const std::string whole = read_file(path);
  for (size_t at : {size_t{0}, size_t{20}, whole.size() - 30, whole.size() - 1}) {
    std::string altered = whole;
    altered[at] = static_cast<char>(altered[at] ^ 0x10);
    write_file(path, altered);
    EXPECT_EQ(store.load(key), std::nullopt) << "a byte altered at " << at;
  }
  for (size_t size : {size_t{0}, size_t{10}, whole.size() - 1}) {
    write_file(path, whole.substr(0, size));
    EXPECT_EQ(store.load(key), std::nullopt) << "cut to " << size << " bytes";
  }
  write_file(path, whole + "x");
  EXPECT_EQ(store.load(key), std::nullopt) << "a byte more";
  // The same entry under another key's name (a collision of the names' hash) is not that key's.
  std::string other = key;
  other.back() = '7';
  write_file(store.entry_path(other), whole);
  EXPECT_EQ(store.load(other), std::nullopt);
  write_file(path, whole);
  EXPECT_EQ(store.load(key), binary_bytes(64, 3));
}

TEST(PlanStore, WritersRacingOnOneKeyLeaveAWholeEntry) {
  const PlanStore store(fresh_folder("plans_racing"));
  const std::string key = "layer norm backward of 4096 x 768, bf16";
  std::vector<std::string> plans;
  for (int writer = 0; writer < 4; ++writer) plans.push_back(binary_bytes(4096 + writer, writer));
  std::string reason;
  ASSERT_TRUE(store.save(key, plans[0], reason)) << reason;
  std::vector<std::thread> writers;
  for (int writer = 0; writer < 4; ++writer) {
    writers.emplace_back([&, writer] {
      std::string failure;
      for (int round = 0; round < 100; ++round)
        EXPECT_TRUE(store.save(key, plans[writer], failure));
    });
  }
  // Each load finds one writer's whole plan: an entry is renamed into place, never rewritten.
  int whole = 0;
  for (int read = 0; read < 400; ++read) {
    const std::optional<std::string> plan = store.load(key);
    whole += plan && std::find(plans.begin(), plans.end(), *plan) != plans.end();
  }
  for (std::thread& writer : writers) writer.join();
  EXPECT_EQ(whole, 400);
  EXPECT_NE(std::find(plans.begin(), plans.end(), store.load(key).value_or("")), plans.end());
  EXPECT_EQ(std::distance(fs::directory_iterator(store.folder()), fs::directory_iterator()), 1);
}

TEST(PlanStore, AFolderItCannotUseIsOneClearError) {
  const fs::path file = fresh_folder("plans_not_a_folder");
  write_file(file, "a file");
  EXPECT_NE(error_of([&] {
              PlanStore store(file);
            }).find("COURSE_PLAN_CACHE: cannot keep plans in " + file.string()),
            std::string::npos);
  EXPECT_NE(error_of([&] { PlanStore store(file / "below"); }).find("cannot keep plans"),
            std::string::npos);
  // A folder removed under a running store: the save says so and returns false.
  const PlanStore store(fresh_folder("plans_removed"));
  fs::remove_all(store.folder());
  std::string reason;
  EXPECT_FALSE(store.save("key", "plan", reason));
  EXPECT_NE(reason.find("cannot write"), std::string::npos) << reason;
}

TEST(PlanStore, TheEnvironmentNamesTheFolderOrNone) {
  const fs::path folder = fresh_folder("plans_named");
  ::setenv("COURSE_PLAN_CACHE", folder.c_str(), 1);
  const std::optional<PlanStore> named = PlanStore::named_by_environment();
  ASSERT_TRUE(named.has_value());
  EXPECT_EQ(named->folder(), folder);
  EXPECT_TRUE(fs::is_directory(folder));
  ::setenv("COURSE_PLAN_CACHE", "", 1);
  EXPECT_FALSE(PlanStore::named_by_environment().has_value());
  ::unsetenv("COURSE_PLAN_CACHE");
  EXPECT_FALSE(PlanStore::named_by_environment().has_value());
}

}  // namespace
}  // namespace course
