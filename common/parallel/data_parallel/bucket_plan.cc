// The reference bucket plan.
#include "common/parallel/data_parallel/bucket_plan.h"

namespace course::parallel {

BucketPlan plan_gradient_buckets(const std::vector<int64_t>& param_bytes, int64_t cap_bytes,
                                 int64_t first_cap_bytes) {
  BucketPlan plan;
  int64_t filled = 0;
  for (size_t i = param_bytes.size(); i-- > 0;) {
    const int64_t cap = plan.size() <= 1 ? first_cap_bytes : cap_bytes;
    if (plan.empty() || filled >= cap) {
      plan.emplace_back();
      filled = 0;
    }
    plan.back().push_back(i);
    filled += param_bytes[i];
  }
  return plan;
}

}  // namespace course::parallel
