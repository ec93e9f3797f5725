// Validation over a rank's share.
#include "common/train/evaluate.h"

#include "common/data/data_loader.h"
#include "common/nn/autocast.h"

namespace course::train {

EvalTally evaluate(nn::Module& model, const std::shared_ptr<const Dataset>& data,
                   const TransformOptions& transform, const TrainingFlags& flags, int rank,
                   int world_size, const std::function<Batch(const Batch&)>& place) {
  std::vector<int64_t> mine;
  for (int64_t i = rank; i < data->size(); i += world_size) mine.push_back(i);
  EvalTally tally;
  if (mine.empty()) return tally;
  LoaderOptions options = loader_options(flags, kValidationBatch);
  options.persistent_workers = false;
  options.drop_last = false;
  DataLoader loader(data, transform, options);
  loader.start_epoch(std::move(mine), 0);
  const bool was_training = model.training();  // a frozen teacher stays in evaluation mode
  model.set_training(false);
  nn::Autocast autocast(flags.amp_dtype, flags.amp);
  while (!loader.done()) {
    const Batch batch = place(loader.next());
    train::tally(model.forward(batch.images), batch.labels, tally);
  }
  model.set_training(was_training);
  return tally;
}

}  // namespace course::train
