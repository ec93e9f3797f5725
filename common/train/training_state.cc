// Checkpoint contents and evaluation tallies.
#include "common/train/training_state.h"

#include "common/kernels/cross_entropy.h"
#include "common/kernels/reduce.h"

namespace course::train {

NamedTensors model_state(nn::Module& model) {
  NamedTensors out;
  nn::ModuleState state = model.state();
  for (auto& [name, p] : state.parameters) out.emplace_back("model." + name, &p->value);
  for (auto& [name, t] : state.buffers) out.emplace_back("model." + name, t);
  return out;
}

NamedTensors training_state(nn::Module& model, optim::Optimizer& optimizer) {
  NamedTensors out = model_state(model);
  for (auto& [name, t] : optimizer.state_tensors()) out.emplace_back("optimizer." + name, t);
  return out;
}

NamedTensors sharded_training_state(
    const std::vector<std::pair<std::string, nn::Parameter*>>& shards,
    optim::Optimizer& optimizer) {
  NamedTensors out;
  for (const auto& [name, p] : shards) out.emplace_back("model." + name, &p->value);
  for (auto& [name, t] : optimizer.state_tensors()) out.emplace_back("optimizer." + name, t);
  return out;
}

int64_t count_correct(const Tensor& logits, const Tensor& labels) {
  const std::vector<int64_t> predicted = argmax_rows(logits).to_vector<int64_t>();
  const std::vector<int64_t> expected = labels.to_vector<int64_t>();
  int64_t correct = 0;
  for (size_t i = 0; i < predicted.size(); ++i) correct += predicted[i] == expected[i];
  return correct;
}

void tally(const Tensor& logits, const Tensor& labels, EvalTally& t) {
  const int64_t rows = labels.numel();
  t.correct += count_correct(logits, labels);
  t.loss_sum += softmax_cross_entropy(logits, labels).host_loss() * static_cast<double>(rows);
  t.samples += rows;
}

}  // namespace course::train
