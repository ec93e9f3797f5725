// Choosing the epoch order from the dataset's storage, and cutting it into the ranks' spans.
#include "common/data/epoch_order.h"

#include "common/core/error.h"
#include "common/data/packed_images.h"
#include "common/data/permutation.h"
#include "common/data/tar_shards.h"

namespace course {

std::vector<int64_t> epoch_order(const Dataset& data, const OrderOptions& o, uint32_t seed,
                                 int64_t epoch, const PageOrder& page_order) {
  if (const auto* shards = dynamic_cast<const TarShards*>(&data)) {
    return webdataset_order(shards->shard_sizes(), o.shuffle_buffer, seed, epoch);
  }
  if (const auto* packed = dynamic_cast<const PackedImages*>(&data)) {
    return (page_order ? page_order : quasi_random_order)(packed->sample_pages(), o.pages_in_memory,
                                                          seed, epoch);
  }
  return epoch_permutation(data.size(), seed, epoch);
}

int64_t rank_span_size(int64_t dataset_size, int world_size, bool drop_last) {
  COURSE_CHECK(world_size > 0, "a span of an epoch needs at least one rank, got ", world_size);
  return drop_last ? dataset_size / world_size : (dataset_size + world_size - 1) / world_size;
}

std::vector<int64_t> rank_span(const std::vector<int64_t>& order, int rank, int world_size,
                               bool drop_last) {
  const int64_t n = static_cast<int64_t>(order.size());
  COURSE_CHECK(rank >= 0 && rank < world_size, "rank ", rank, " is not one of ", world_size);
  COURSE_CHECK(n > 0, "an empty epoch has no share for rank ", rank);
  const int64_t span = rank_span_size(n, world_size, drop_last);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(span));
  for (int64_t k = rank * span; k < (rank + 1) * span; ++k) out.push_back(order[k % n]);
  return out;
}

}  // namespace course
