// Gathering texts of different lengths: their lengths first, then the texts padded to the
// longest.
#include "common/parallel/comm/gather_strings.h"

#include <algorithm>
#include <cstring>

namespace course::parallel {

std::vector<std::string> all_gather_strings(const std::string& mine, Communicator& comm) {
  const int n = comm.size();
  Tensor lengths = Tensor::empty({n}, DType::kI64);
  comm.all_gather(Tensor::from_vector<int64_t>({static_cast<int64_t>(mine.size())}, {1}), lengths)
      ->wait();
  const std::vector<int64_t> sizes = lengths.to_vector<int64_t>();
  const int64_t longest = std::max<int64_t>(1, *std::max_element(sizes.begin(), sizes.end()));
  Tensor padded = Tensor::empty({longest}, DType::kU8);
  std::memset(padded.data(), 0, longest);
  std::memcpy(padded.data(), mine.data(), mine.size());
  Tensor all = Tensor::empty({longest * n}, DType::kU8);
  comm.all_gather(padded, all)->wait();
  const char* bytes = static_cast<const char*>(all.data());
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) out.emplace_back(bytes + r * longest, sizes[r]);
  return out;
}

}  // namespace course::parallel
