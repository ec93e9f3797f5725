// Weight masks: the prunable weights, global magnitude masks, and the masks applied and measured.
#include "common/nn/weight_pruning.h"

#include <algorithm>
#include <cmath>

#include "common/core/error.h"
#include "common/kernels/elementwise.h"

namespace course::nn {

std::vector<PrunedWeight> prunable_weights(Module& model) {
  std::vector<PrunedWeight> out;
  for (const auto& [name, p] : model.state().parameters) {
    if (p->value.dim() >= 2) out.push_back({name, p, {}});
  }
  COURSE_CHECK(!out.empty(), "the network has no weights to prune");
  return out;
}

void mask_by_global_magnitude(std::vector<PrunedWeight>& weights, double sparsity) {
  COURSE_CHECK(sparsity >= 0 && sparsity < 1, "a sparsity is in [0, 1), got ", sparsity);
  std::vector<std::vector<float>> values, masks;
  size_t total = 0;
  for (const PrunedWeight& w : weights) {
    values.push_back(w.weight->value.to(Device::cpu()).to_vector<float>());
    masks.emplace_back(values.back().size(), 1.0f);
    total += values.back().size();
  }
  // Every weight as (layer, element), the pruned ones first: smallest magnitude, then position.
  std::vector<std::pair<size_t, size_t>> order;
  order.reserve(total);
  for (size_t l = 0; l < values.size(); ++l) {
    for (size_t i = 0; i < values[l].size(); ++i) order.emplace_back(l, i);
  }
  const size_t pruned = static_cast<size_t>(std::floor(sparsity * static_cast<double>(total)));
  const auto smaller = [&](const auto& a, const auto& b) {
    const float ma = std::fabs(values[a.first][a.second]),
                mb = std::fabs(values[b.first][b.second]);
    return ma < mb || (ma == mb && a < b);
  };
  std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(pruned), order.end(),
                   smaller);
  for (size_t k = 0; k < pruned; ++k) masks[order[k].first][order[k].second] = 0.0f;
  for (size_t l = 0; l < weights.size(); ++l) {
    weights[l].mask = Tensor::from_vector(masks[l], weights[l].weight->value.shape(),
                                          weights[l].weight->value.device());
    weights[l].dense = false;
  }
}

void apply_masks(const std::vector<PrunedWeight>& weights) {
  for (const PrunedWeight& w : weights) {
    COURSE_CHECK(w.mask.defined(), "no mask for ", w.name);
    copy_(w.weight->value, mul(w.weight->value, w.mask));
  }
}

double measured_sparsity(const std::vector<PrunedWeight>& weights) {
  int64_t zeros = 0, total = 0;
  for (const PrunedWeight& w : weights) {
    for (const float v : w.weight->value.to(Device::cpu()).to_vector<float>()) zeros += v == 0.0f;
    total += w.weight->value.numel();
  }
  return static_cast<double>(zeros) / static_cast<double>(total);
}

}  // namespace course::nn
