// The DataLoader's batches placed on the training device, with the host-to-device copy of the
// next batch overlapping the current step (--non-blocking, as PyTorch's pin_memory +
// .to(device, non_blocking=True) + a prefetching loader):
//   - the copy of batch b + 1 is queued on a copy stream of its own as soon as batch b is
//     handed out, from the loader's pinned host memory, so it runs while step b computes;
//   - before batch b is used, the compute (default) stream waits on the event recorded after
//     its copy: no host synchronisation, and no kernel reads a half-copied batch;
//   - the copy stream in turn waits for the compute work queued so far before every copy
//     (ahead, at an epoch's start, blocking, and place()), so a copy never lands in memory
//     that an earlier step may still be reading;
//   - a host batch is kept until its copy is known to be done (its event queried, never waited
//     for, unless kMaxHandedOut batches are still being copied: the device is that far behind),
//     so the loader never refills pinned memory that is still being read.
// Without non_blocking each batch is copied when asked for and the host waits for the copy.
// On the CPU there is no copy engine: the lab then passes no transfer and uses the loader's
// batches where they are (the loader's workers already prepare them ahead).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "common/data/batch.h"
#include "common/data/data_loader.h"
#include "common/tensor/stream.h"

namespace course {

// The plain transfer: images and labels copied to `device` on `stream`.
Batch copy_to_device(const Batch& host, Device device, const Stream& stream);

class DeviceBatches {
 public:
  // Queues the copy of a host batch to `device` on `stream` (day 1's TP1.1 in the labs).
  using Transfer = std::function<Batch(const Batch& host, Device device, const Stream& stream)>;

  // Work on a loaded training batch on the host before its transfer (day 3's MixUp on the
  // host); never applied to the batches of place().
  using Prepare = std::function<Batch(Batch host)>;

  // An empty `transfer` hands out the loader's batches unchanged (after `prepare`, if any).
  DeviceBatches(DataLoader& loader, Device device, bool non_blocking, Transfer transfer,
                Prepare prepare = nullptr);
  ~DeviceBatches();
  DeviceBatches(const DeviceBatches&) = delete;
  DeviceBatches& operator=(const DeviceBatches&) = delete;

  // Starts the loader's epoch over `indices` (this rank's samples), skipping its first
  // `first_batch` batches (a resumed run continues mid-epoch), and queues the first copy.
  void start_epoch(std::vector<int64_t> indices, int64_t epoch, int64_t first_batch = 0);
  // The next batch, ready to be used by work queued on the default stream from now on.
  Batch next();
  // Another host batch (validation's) placed the same way, the host waiting for its copy.
  Batch place(const Batch& host);

 private:
  struct InFlight {
    Batch host, device;
    std::unique_ptr<Event> copied;
  };
  Batch load();                              // the loader's next batch, prepared
  Batch fenced_transfer(const Batch& host);  // after the compute stream's queued work
  InFlight load_and_copy();
  void retire(std::optional<InFlight>& batch);  // waits for its copy, then frees its host side
  // Frees the host side of the handed-out batches whose copies are done, waiting only for those
  // beyond the newest `keep`.
  void retire_handed_out(size_t keep);

  DataLoader& loader_;
  Device device_;
  bool non_blocking_;
  Transfer transfer_;
  Prepare prepare_;
  Stream copy_stream_;
  Event compute_queued_;
  std::optional<InFlight> ahead_;    // the next batch, being copied
  std::deque<InFlight> handed_out_;  // oldest first, their host sides kept until copied
};

}  // namespace course
