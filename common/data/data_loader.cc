// Worker threads, the prefetch bound and batch assembly.
#include "common/data/data_loader.h"

#include <cstdio>

#include "common/data/device_decode.h"

namespace course {

int64_t batches_per_epoch(int64_t samples, int64_t batch_size, bool drop_last) {
  COURSE_CHECK(batch_size > 0, "--batch-size must be positive, got ", batch_size);
  const int64_t batches =
      drop_last ? samples / batch_size : (samples + batch_size - 1) / batch_size;
  COURSE_CHECK(batches > 0, "no complete batch of ", batch_size, " in ", samples,
               " samples (lower --batch-size or turn off --drop-last)");
  return batches;
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> source, const TransformOptions& transform,
                       const LoaderOptions& options)
    : source_(std::move(source)),
      transform_(transform),
      steps_(compose(transform)),
      options_(options) {
  COURSE_CHECK(options.batch_size > 0, "--batch-size must be positive, got ", options.batch_size);
  COURSE_CHECK(options.num_workers >= 0, "--num-workers must not be negative, got ",
               options.num_workers);
  COURSE_CHECK(options.prefetch_factor > 0, "--prefetch-factor must be positive, got ",
               options.prefetch_factor);
  COURSE_CHECK(source_->size() > 0, "the dataset is empty");
  if (options.decode_on_device) check_device_transforms(transform);
}

DataLoader::~DataLoader() { stop_workers(); }

int64_t DataLoader::batches() const {
  const int64_t n = static_cast<int64_t>(indices_->size()), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;  // 0 before the first epoch
}

int64_t DataLoader::skipped_samples() const {
  std::lock_guard lock(mutex_);
  return skipped_;
}

void DataLoader::start_epoch(std::vector<int64_t> indices, int64_t epoch) {
  for (int64_t i : indices) {
    COURSE_CHECK(i >= 0 && i < source_->size(), "sample index ", i, " is outside the dataset of ",
                 source_->size());
  }
  if (!options_.persistent_workers) stop_workers();
  {
    std::lock_guard lock(mutex_);
    indices_ = std::make_shared<const std::vector<int64_t>>(std::move(indices));
    epoch_ = epoch;
    consumed_ = 0;
    ready_.clear();
    ++generation_;
  }
  batches_per_epoch(static_cast<int64_t>(indices_->size()), options_.batch_size,
                    options_.drop_last);  // throws when there is no batch
  if (workers_.empty()) start_workers();
  changed_.notify_all();
}

void DataLoader::skip_or_rethrow(const CorruptSampleError& e) const {
  if (!options_.skip_corrupt) throw e;
  std::fprintf(stderr, "warning: skipping a sample: %s\n", e.what());
  std::lock_guard lock(mutex_);
  ++skipped_;
}

std::mt19937 DataLoader::sample_rng(int64_t sample, int64_t epoch) const {
  std::seed_seq seeds{options_.seed, static_cast<uint32_t>(epoch), static_cast<uint32_t>(sample),
                      static_cast<uint32_t>(sample >> 32)};
  return std::mt19937(seeds);
}

Batch DataLoader::encoded_batch(int64_t index, const Indices& indices, int64_t first, int64_t count,
                                int64_t epoch) const {
  auto encoded = std::make_shared<EncodedBatch>();
  encoded->channels = source_->channels();
  encoded->size = transform_.size;
  encoded->mean = transform_.mean;
  encoded->std = transform_.std;
  encoded->skip_corrupt = options_.skip_corrupt;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t sample = (*indices)[first + i];
    std::mt19937 rng = sample_rng(sample, epoch);
    try {
      encoded->samples.push_back(plan_encoded_sample(*source_, sample, transform_, rng));
    } catch (const CorruptSampleError& e) {
      skip_or_rethrow(e);
    }
  }
  COURSE_CHECK(!encoded->samples.empty(), "every sample of batch ", index, " is unreadable");
  Batch batch;
  batch.encoded = std::move(encoded);
  return batch;
}

Batch DataLoader::decoded_batch(int64_t index, const Indices& indices, int64_t first, int64_t count,
                                int64_t epoch) const {
  const int64_t c = source_->channels(), side = transform_.size;
  const Shape shape{count, c, side, side};
  Tensor images = options_.pin_memory ? Tensor::empty_pinned(shape) : Tensor::empty(shape);
  std::vector<int64_t> labels;
  int64_t kept = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t sample = (*indices)[first + i];
    std::mt19937 rng = sample_rng(sample, epoch);
    try {
      transform_image(source_->image(sample), steps_, transform_, rng,
                      images.data_as<float>() + kept * c * side * side);
    } catch (const CorruptSampleError& e) {
      skip_or_rethrow(e);
      continue;
    }
    labels.push_back(source_->label(sample));
    ++kept;
  }
  COURSE_CHECK(kept > 0, "every sample of batch ", index, " is unreadable");
  Batch batch;
  batch.images = kept == count ? images : images.slice(0, kept);
  Tensor label_tensor = options_.pin_memory ? Tensor::empty_pinned({kept}, DType::kI64)
                                            : Tensor::empty({kept}, DType::kI64);
  std::copy(labels.begin(), labels.end(), label_tensor.data_as<int64_t>());
  batch.labels = label_tensor;
  return batch;
}

DataLoader::Slot DataLoader::make_batch(int64_t index, const Indices& indices,
                                        int64_t epoch) const {
  Slot slot;
  try {
    const int64_t first = index * options_.batch_size;
    const int64_t count =
        std::min<int64_t>(options_.batch_size, static_cast<int64_t>(indices->size()) - first);
    slot.batch = options_.decode_on_device ? encoded_batch(index, indices, first, count, epoch)
                                           : decoded_batch(index, indices, first, count, epoch);
  } catch (...) {
    slot.error = std::current_exception();
  }
  return slot;
}

void DataLoader::worker_loop(int worker) {
  enter_process_device();  // its pinned batches belong to the process's GPU, not GPU 0
  const int64_t workers = options_.num_workers, ahead = workers * options_.prefetch_factor;
  int64_t seen_generation = 0;
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || generation_ != seen_generation; });
    if (stopping_) return;
    seen_generation = generation_;
    const Indices indices = indices_;
    const int64_t epoch = epoch_, total = batches();
    for (int64_t b = worker; b < total; b += workers) {
      changed_.wait(lock, [&] {
        return stopping_ || generation_ != seen_generation || b < consumed_ + ahead;
      });
      if (stopping_ || generation_ != seen_generation) break;
      lock.unlock();
      Slot slot = make_batch(b, indices, epoch);
      lock.lock();
      if (generation_ != seen_generation) break;
      ready_.emplace(b, std::move(slot));
      changed_.notify_all();
    }
  }
}

void DataLoader::start_workers() {
  std::lock_guard lock(mutex_);
  stopping_ = false;
  for (int w = 0; w < options_.num_workers; ++w)
    workers_.emplace_back(&DataLoader::worker_loop, this, w);
}

void DataLoader::stop_workers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

Batch DataLoader::next() {
  COURSE_CHECK(consumed_ < batches(), "the epoch's ", batches(), " batches are all consumed");
  Slot slot;
  if (options_.num_workers == 0) {
    slot = make_batch(consumed_, indices_, epoch_);
  } else {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return ready_.count(consumed_) > 0; });
    slot = std::move(ready_.at(consumed_));
    ready_.erase(consumed_);
  }
  {
    std::lock_guard lock(mutex_);
    ++consumed_;
  }
  changed_.notify_all();
  if (slot.error) std::rethrow_exception(slot.error);
  return slot.batch;
}

}  // namespace course
