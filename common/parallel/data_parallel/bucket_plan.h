// DDP's gradient buckets: which parameters are packed and all-reduced together, and in which
// order. This is the reference copy of day 2's TP2.3 (day2_ddp/README.md#tp23), used by later
// days and bench/, and by //day2_ddp:check to judge the trainee's version.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace course::parallel {

// Buckets as lists of indices into the model's parameters(), in the order they are reduced.
// Every parameter appears in exactly one bucket.
using BucketPlan = std::vector<std::vector<size_t>>;

// PyTorch's caps, the course's: 25 MiB buckets, the first 1 MiB.
constexpr int64_t kBucketCapBytes = 25 << 20;
constexpr int64_t kFirstBucketCapBytes = 1 << 20;

// Parameters in reverse order (the order backward produces their gradients); a bucket closes
// as soon as its bytes reach its cap: first_cap_bytes for the first bucket (small, so the first
// all-reduce starts early), cap_bytes for the others.
BucketPlan plan_gradient_buckets(const std::vector<int64_t>& param_bytes, int64_t cap_bytes,
                                 int64_t first_cap_bytes);

}  // namespace course::parallel
