// The order an epoch reads a dataset in, by its storage: WebDataset's shard-then-buffer shuffle
// for tar shards, the quasi-random page order for packed files, a plain shuffle otherwise.
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

}  // namespace course
