// The mutations.
#include "common/testing/mutate.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace course::testing {

std::string Mutator::mutate(const std::string& valid) {
  std::string bytes = valid;
  const int count = std::uniform_int_distribution<int>(1, 4)(rng_);
  for (int m = 0; m < count; ++m) {
    const size_t at =
        bytes.empty() ? 0 : std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng_);
    switch (std::uniform_int_distribution<int>(0, 4)(rng_)) {
      case 0:  // flip one bit
        if (!bytes.empty()) bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng_() % 8)));
        break;
      case 1:  // overwrite a byte
        if (!bytes.empty()) bytes[at] = static_cast<char>(rng_() & 0xff);
        break;
      case 2: {  // an extreme integer over whatever field is there
        static constexpr uint64_t kExtremes[] = {
            0, 1, 0x7f, 0xff, 0x7fffffff, 0xffffffff, 0x7fffffffffffffff, ~uint64_t{0}};
        const uint64_t value = kExtremes[rng_() % std::size(kExtremes)];
        const size_t width = std::min<size_t>(rng_() % 2 ? 8 : 4, bytes.size() - at);
        std::memcpy(bytes.data() + at, &value, width);
        break;
      }
      case 3:  // truncate
        bytes.resize(at);
        break;
      default:  // insert random bytes
        bytes.insert(at, std::string(1 + rng_() % 16, static_cast<char>(rng_() & 0xff)));
    }
  }
  return bytes;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace course::testing
