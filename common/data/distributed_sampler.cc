// The reference distributed sampler: position i of the padded list is order[i mod n].
#include "common/data/distributed_sampler.h"

#include "common/core/error.h"
#include "common/data/permutation.h"

namespace course {

int64_t samples_per_rank(const SamplerOptions& o, int world_size) {
  COURSE_CHECK(world_size > 0, "a sampler needs at least one rank");
  const int64_t n = o.dataset_size;
  return o.drop_last ? n / world_size : (n + world_size - 1) / world_size;
}

std::vector<int64_t> distributed_sample(const SamplerOptions& o, int rank, int world_size,
                                        int64_t epoch) {
  COURSE_CHECK(rank >= 0 && rank < world_size, "rank ", rank, " outside a world of ", world_size);
  COURSE_CHECK(o.dataset_size > 0, "a sampler over an empty dataset");
  const std::vector<int64_t> order =
      o.shuffle ? epoch_permutation(o.dataset_size, o.seed, epoch) : in_order(o.dataset_size);
  const int64_t count = samples_per_rank(o, world_size);
  std::vector<int64_t> mine(count);
  for (int64_t k = 0; k < count; ++k) mine[k] = order[(rank + k * world_size) % o.dataset_size];
  return mine;
}

}  // namespace course
