// Window cutting, dealing and batch assembly.
#include "common/data/token_windows.h"

#include <algorithm>

#include "common/data/distributed_sampler.h"
#include "common/tensor/pinned_staging.h"

namespace course {

TokenWindows::TokenWindows(Tensor tokens, const TokenWindowOptions& options, int rank,
                           int world_size)
    : tokens_(std::move(tokens)), options_(options), rank_(rank), world_size_(world_size) {
  COURSE_CHECK(tokens_.dim() == 1 && tokens_.dtype() == DType::kI32 && tokens_.device().is_cpu(),
               "token windows need a (n,) i32 CPU stream, got ", tokens_.str());
  COURSE_CHECK(options.batch_size > 0 && options.context > 0,
               "token windows need a positive batch size and context");
  windows_ = std::max<int64_t>(tokens_.numel() - 1, 0) / options.context;
  COURSE_CHECK(batches() > 0, "a stream of ", tokens_.numel(), " tokens holds ", windows_,
               " windows of ", options.context + 1, " tokens: not one batch of ",
               options.batch_size, " for each of ", world_size, " rank(s)");
  set_epoch(0);
}

int64_t TokenWindows::batches() const { return windows_ / world_size_ / options_.batch_size; }

void TokenWindows::set_epoch(int64_t epoch) {
  mine_ = distributed_sample({.dataset_size = windows_,
                              .shuffle = options_.shuffle,
                              .seed = options_.seed,
                              .drop_last = true},
                             rank_, world_size_, epoch);
}

Tensor TokenWindows::batch(int64_t index) const {
  COURSE_CHECK(index >= 0 && index < batches(), "batch ", index, " of ", batches());
  const int64_t b = options_.batch_size, t = options_.context;
  Tensor out = Tensor::empty({b, t + 1}, DType::kI32);
  const int32_t* stream = tokens_.data_as<int32_t>();
  int32_t* rows = out.data_as<int32_t>();
  for (int64_t i = 0; i < b; ++i) {
    const int32_t* start = stream + mine_[index * b + i] * t;
    std::copy(start, start + t + 1, rows + i * (t + 1));
  }
  return out;
}

NextTokenBatch micro_batch_of(const NextTokenBatch& batch, int micro, int micro_batches) {
  const int64_t rows = batch.inputs.size(0), targets = batch.targets.size(0);
  COURSE_CHECK(micro_batches >= 1 && rows % micro_batches == 0 && targets % rows == 0 &&
                   micro >= 0 && micro < micro_batches,
               "a batch of ", batch.inputs.str(), " inputs and ", batch.targets.str(),
               " targets has no micro-batch ", micro, " of ", micro_batches, " equal ones");
  const int64_t part = rows / micro_batches, part_targets = targets / micro_batches;
  return {batch.inputs.slice(micro * part, (micro + 1) * part),
          batch.targets.slice(micro * part_targets, (micro + 1) * part_targets)};
}

NextTokenBatch next_token_batch(const Tensor& windows, Device device) {
  COURSE_CHECK(windows.dim() == 2 && windows.size(1) >= 2 && windows.dtype() == DType::kI32 &&
                   windows.device().is_cpu(),
               "next-token batches come from (B, T + 1) i32 windows on the CPU, got ",
               windows.str());
  const int64_t batch = windows.size(0), seq = windows.size(1) - 1;
  const int32_t* w = windows.data_as<int32_t>();
  std::vector<int32_t> inputs(batch * seq);
  std::vector<int64_t> targets(batch * seq);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq; ++t) {
      inputs[b * seq + t] = w[b * (seq + 1) + t];
      targets[b * seq + t] = w[b * (seq + 1) + t + 1];
    }
  }
  // Through pinned slots: a copy from pageable memory would make the host wait every step.
  return {upload_to(device, inputs, {batch, seq}), upload_to(device, targets, {batch * seq})};
}

}  // namespace course
