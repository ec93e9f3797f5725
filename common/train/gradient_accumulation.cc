// Splitting a batch by rows, and the passes of an accumulated step.
#include "common/train/gradient_accumulation.h"

#include "common/core/error.h"
#include "common/kernels/elementwise.h"

namespace course::train {

std::vector<MicroBatch> split_into_micro_batches(const Batch& batch, int64_t parts) {
  const int64_t images = batch.images.size(0);
  COURSE_CHECK(parts >= 1, "a step needs at least one micro-batch, got ", parts);
  COURSE_CHECK(images >= parts, "a batch of ", images, " image(s) does not split into ", parts,
               " micro-batches (--accumulate): add --drop-last, or accumulate fewer");
  std::vector<MicroBatch> micro;
  int64_t begin = 0;
  for (int64_t k = 0; k < parts; ++k) {
    const int64_t end = begin + images / parts + (k < images % parts ? 1 : 0);
    Batch rows{batch.images.slice(begin, end), batch.labels.slice(begin, end)};
    if (batch.targets.defined()) rows.targets = batch.targets.slice(begin, end);
    micro.push_back({.batch = rows,
                     .share = static_cast<float>(end - begin) / static_cast<float>(images),
                     .last = k + 1 == parts});
    begin = end;
  }
  return micro;
}

std::string describe_step_batch(int64_t micro_batch, int64_t parts) {
  const std::string step = std::to_string(micro_batch * parts);
  if (parts == 1) return step;
  return step + " (" + std::to_string(parts) + " micro-batches of " + std::to_string(micro_batch) +
         ")";
}

void check_micro_batches(int64_t samples, int64_t batch, int64_t parts, bool drop_last) {
  const int64_t last = samples % batch;
  COURSE_CHECK(drop_last || last == 0 || last >= parts, "the epoch's last batch of ", last,
               " image(s) does not split into ", parts,
               " micro-batches (--accumulate): add --drop-last, or accumulate fewer");
}

Tensor accumulate_gradients(nn::Module& model, const Batch& batch, int64_t parts,
                            const std::function<Tensor(const MicroBatch&)>& forward_backward) {
  const std::vector<MicroBatch> micro = split_into_micro_batches(batch, parts);
  model.zero_grad();
  if (micro.size() == 1) return forward_backward(micro.front());
  Tensor loss = zeros({1}, DType::kF32, batch.images.device());
  for (const MicroBatch& m : micro) axpy_(m.share, forward_backward(m), loss);
  return loss;
}

}  // namespace course::train
