// Seeded mutations of a valid file's bytes, for the fuzz tests of every reader of outside bytes
// (IDX files, images, checkpoints): bit flips, overwritten bytes, extreme integers written
// over a field, truncations and insertions. The same seed gives the same inputs, so a failing
// input is reproduced by its index.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace course::testing {

class Mutator {
 public:
  explicit Mutator(uint32_t seed) : rng_(seed) {}
  // One to four mutations of `valid`.
  std::string mutate(const std::string& valid);

 private:
  std::mt19937 rng_;
};

void write_file(const std::string& path, const std::string& bytes);
std::string read_file(const std::string& path);

}  // namespace course::testing
