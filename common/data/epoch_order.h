// The order an epoch reads a dataset in, by its storage: WebDataset's shard-then-buffer shuffle
// for tar shards, the quasi-random page order for packed files, a plain shuffle otherwise; and
// each rank's share of it when several ranks train together.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/data/dataset.h"

namespace course {

struct OrderOptions {
  int64_t shuffle_buffer = 1000;  // tar shards: samples in the shuffle buffer
  int64_t pages_in_memory = 4;    // packed files: pages whose samples are shuffled together
};

// A packed file's order from its samples' pages (quasi_random_order's signature).
using PageOrder =
    std::function<std::vector<int64_t>(const std::vector<int64_t>& sample_pages,
                                       int64_t pages_in_memory, uint32_t seed, int64_t epoch)>;

// `page_order` orders packed files (the day-3 lab passes the trainee's).
std::vector<int64_t> epoch_order(const Dataset& data, const OrderOptions& options, uint32_t seed,
                                 int64_t epoch, const PageOrder& page_order = nullptr);

// Rank `rank`'s share of an epoch's `order` on `world_size` ranks: the rank-th of equal,
// contiguous spans. Every rank takes the same number of samples (DDP's ranks must take the same
// steps), and a rank reads its own run of the order: about 1/world_size of the tar shards or
// packed pages, as WebDataset's split by node gives each node its own shards. Without
// drop_last the order is padded with its first samples to a multiple of world_size
// (DistributedSampler's rule); with it, the remainder is dropped.
std::vector<int64_t> rank_span(const std::vector<int64_t>& order, int rank, int world_size,
                               bool drop_last);

// The samples each rank takes from an epoch of `dataset_size` (rank_span's length).
int64_t rank_span_size(int64_t dataset_size, int world_size, bool drop_last);

}  // namespace course
