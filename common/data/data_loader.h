// DataLoader: batches of transformed images assembled by worker threads ahead of the training
// loop, as PyTorch's DataLoader does with processes.
//   - batch b of an epoch is made by worker b % num_workers; at most
//     num_workers * prefetch_factor batches are ready or in the making ahead of the consumer;
//   - num_workers 0 makes each batch in the caller's thread when it is asked for;
//   - persistent workers live across epochs; otherwise they start with every epoch (and the
//     first batch of each epoch pays for it);
//   - pinned memory: batches are allocated page-locked, so host-to-device copies can be
//     asynchronous (non_blocking);
//   - each sample's random augmentation is seeded from (seed, epoch, index), so batches do
//     not depend on the number of workers or on timing.
// With decode_on_device the workers read and plan instead of decoding (device_decode.h).
// A sample that cannot be decoded fails the epoch with its path, or with skip_corrupt is
// reported on stderr and left out of its batch. An error in a worker reaches the caller from
// next(); it never ends the program silently.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common/data/batch.h"
#include "common/data/dataset.h"
#include "common/data/transforms.h"

namespace course {

struct LoaderOptions {
  int64_t batch_size = 128;
  int num_workers = 0;
  int prefetch_factor = 2;
  bool persistent_workers = true;
  bool pin_memory = true;
  bool drop_last = false;
  bool skip_corrupt = false;
  // Batches of JPEG bytes with their crops and flips drawn (device_decode.h), for the training
  // device to decode, instead of decoded images.
  bool decode_on_device = false;
  uint32_t seed = 0;
};

// Batches of `batch_size` in an epoch of `samples` (the last one smaller unless drop_last);
// throws when that is none.
int64_t batches_per_epoch(int64_t samples, int64_t batch_size, bool drop_last);

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> source, const TransformOptions& transform,
             const LoaderOptions& options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts an epoch over `indices` (this rank's samples, in order, e.g. from a sampler).
  void start_epoch(std::vector<int64_t> indices, int64_t epoch);
  int64_t batches() const;  // in the current epoch
  int64_t batch_size() const { return options_.batch_size; }
  bool done() const { return consumed_ == batches(); }
  // The next batch of the epoch, on the CPU (pinned with pin_memory).
  Batch next();
  int64_t skipped_samples() const;

  const Dataset& source() const { return *source_; }

 private:
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };

  using Indices = std::shared_ptr<const std::vector<int64_t>>;
  Slot make_batch(int64_t index, const Indices& indices, int64_t epoch) const;
  // Batch `index`'s samples indices[first, first + count): still encoded, for the device to
  // decode, or decoded and transformed here.
  Batch encoded_batch(int64_t index, const Indices& indices, int64_t first, int64_t count,
                      int64_t epoch) const;
  Batch decoded_batch(int64_t index, const Indices& indices, int64_t first, int64_t count,
                      int64_t epoch) const;
  // A sample's augmentation draws: the same for a sample in an epoch whichever worker makes it.
  std::mt19937 sample_rng(int64_t sample, int64_t epoch) const;
  // A sample the batch leaves out (skip_corrupt), reported; rethrows otherwise.
  void skip_or_rethrow(const CorruptSampleError& e) const;
  void worker_loop(int worker);
  void start_workers();
  void stop_workers();

  std::shared_ptr<const Dataset> source_;
  TransformOptions transform_;
  std::vector<ImageStep> steps_;  // compose(transform_), built once
  LoaderOptions options_;
  Indices indices_ = std::make_shared<std::vector<int64_t>>();  // replaced, never modified
  int64_t epoch_ = 0, consumed_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int64_t, Slot> ready_;
  int64_t generation_ = 0;  // bumped by every start_epoch, so workers pick up the new one
  bool stopping_ = false;
  mutable int64_t skipped_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace course
