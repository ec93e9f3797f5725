// Choosing the epoch order from the dataset's storage.
#include "common/data/epoch_order.h"

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

}  // namespace course
