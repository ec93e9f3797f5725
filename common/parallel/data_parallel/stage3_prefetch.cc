// The walk ahead of the block being run, within DeepSpeed's two budgets.
#include "common/parallel/data_parallel/stage3_prefetch.h"

#include <algorithm>

namespace course::parallel {

std::optional<PrefetchBudget> stage3_budget(const ZeroCommunication& communication) {
  if (!communication.prefetch_bucket_elements) return std::nullopt;
  return PrefetchBudget{.bucket_elements = *communication.prefetch_bucket_elements,
                        .max_live_elements = communication.max_live_elements};
}

std::vector<size_t> stage3_prefetch_walk(const std::vector<int64_t>& elements,
                                         const std::vector<bool>& held, int64_t live, size_t index,
                                         bool forward, PrefetchBudget budget) {
  std::vector<size_t> launched;
  if (budget.bucket_elements <= 0) return launched;
  const int64_t limit = std::min(budget.max_live_elements - live, budget.bucket_elements);
  int64_t prefetching = 0;
  const int64_t step = forward ? 1 : -1, count = static_cast<int64_t>(elements.size());
  for (int64_t i = static_cast<int64_t>(index) + step; i >= 0 && i < count && prefetching < limit;
       i += step) {
    if (held[i]) continue;
    launched.push_back(static_cast<size_t>(i));
    prefetching += elements[i];
  }
  return launched;
}

Stage3Prefetch::Stage3Prefetch(PrefetchBudget budget, std::vector<ShardedUnit*> blocks,
                               std::vector<ShardedUnit*> live)
    : budget_(budget), blocks_(std::move(blocks)), live_(std::move(live)) {}

int64_t Stage3Prefetch::live_elements() const {
  int64_t live = 0;
  for (const ShardedUnit* unit : live_) {
    if (unit->holds_values()) live += unit->numel();
  }
  return live;
}

void Stage3Prefetch::after_fetch(size_t index, bool forward) {
  std::vector<int64_t> elements;
  std::vector<bool> held;
  for (const ShardedUnit* unit : blocks_) {
    elements.push_back(unit ? unit->numel() : 0);
    held.push_back(!unit || unit->holds_values());  // a wholly persistent block: always there
  }
  for (size_t i : stage3_prefetch_walk(elements, held, live_elements(), index, forward, budget_)) {
    blocks_[i]->start_gather();
  }
}

}  // namespace course::parallel
