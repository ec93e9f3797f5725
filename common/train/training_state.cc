// Checkpoint contents and evaluation tallies.
#include "common/train/training_state.h"

#include "common/kernels/cross_entropy.h"
#include "common/kernels/reduce.h"

namespace course::train {

NamedTensors training_state(nn::Module& model, optim::Optimizer& optimizer) {
  NamedTensors out;
  nn::ModuleState state = model.state();
  for (auto& [name, p] : state.parameters) out.emplace_back("model." + name, &p->value);
  for (auto& [name, t] : state.buffers) out.emplace_back("model." + name, t);
  for (auto& [name, t] : optimizer.state_tensors()) out.emplace_back("optimizer." + name, t);
  return out;
}

void tally(const Tensor& logits, const Tensor& labels, EvalTally& t) {
  const std::vector<int64_t> predicted = argmax_rows(logits).to_vector<int64_t>();
  const std::vector<int64_t> expected = labels.to_vector<int64_t>();
  for (size_t i = 0; i < predicted.size(); ++i) t.correct += predicted[i] == expected[i];
  t.loss_sum += softmax_cross_entropy(logits, labels).loss * static_cast<double>(expected.size());
  t.samples += static_cast<int64_t>(expected.size());
}

}  // namespace course::train
