// Regrouping packed rows by rank: each rank's piece of each part copied into place.
#include "common/parallel/tensor_parallel/rank_groups.h"

#include <numeric>

#include "common/kernels/elementwise.h"

namespace course::parallel {

namespace {

// Copies every (rank, part) piece of `from` to its place in `to`; `to_grouped`: from packed to
// grouped, else back.
Tensor regrouped(const Tensor& from, const std::vector<int64_t>& parts, int ranks,
                 bool to_grouped) {
  const int64_t rows = std::accumulate(parts.begin(), parts.end(), int64_t{0});
  COURSE_CHECK(from.dim() >= 1 && from.size(0) == rows, "packed rows of ", from.str(),
               " are not the parts' ", rows);
  for (int64_t part : parts) {
    COURSE_CHECK(part % ranks == 0, "a packed part of ", part, " rows does not split over ", ranks,
                 " tensor-parallel ranks");
  }
  Tensor to = Tensor::empty(from.shape(), from.dtype(), from.device());
  int64_t grouped_at = 0;
  for (int r = 0; r < ranks; ++r) {
    int64_t packed_at = 0;
    for (int64_t part : parts) {
      const int64_t piece = part / ranks, packed_first = packed_at + r * piece;
      Tensor packed_rows = (to_grouped ? from : to).slice(packed_first, packed_first + piece);
      Tensor grouped_rows = (to_grouped ? to : from).slice(grouped_at, grouped_at + piece);
      if (to_grouped) {
        copy_(grouped_rows, packed_rows);
      } else {
        copy_(packed_rows, grouped_rows);
      }
      packed_at += part;
      grouped_at += piece;
    }
  }
  return to;
}

}  // namespace

Tensor rows_grouped_by_rank(const Tensor& packed, const std::vector<int64_t>& parts, int ranks) {
  return regrouped(packed, parts, ranks, true);
}

Tensor rows_ungrouped(const Tensor& grouped, const std::vector<int64_t>& parts, int ranks) {
  return regrouped(grouped, parts, ranks, false);
}

nn::Linear grouped_by_rank(const nn::Linear& packed, const std::vector<int64_t>& parts, int ranks) {
  Tensor weight = rows_grouped_by_rank(packed.weight.value, parts, ranks);
  if (!packed.bias) return nn::Linear(std::move(weight));
  return nn::Linear(std::move(weight), rows_grouped_by_rank(packed.bias->value, parts, ranks));
}

}  // namespace course::parallel
