// The copy stream, its events and the one-batch-ahead order.
#include "common/data/device_batches.h"

#include <algorithm>

namespace course {

Batch copy_to_device(const Batch& host, Device device, const Stream& stream) {
  return {host.images.to(device, stream), host.labels.to(device, stream),
          host.targets.defined() ? host.targets.to(device, stream) : Tensor()};
}

DeviceBatches::DeviceBatches(DataLoader& loader, Device device, bool non_blocking,
                             Transfer transfer, Prepare prepare)
    : loader_(loader),
      device_(device),
      non_blocking_(non_blocking && transfer != nullptr),
      transfer_(std::move(transfer)),
      prepare_(std::move(prepare)),
      copy_stream_(device),
      compute_queued_(device) {}

namespace {
// Handed-out batches whose copies may still be under way: the device is at most this many steps
// behind the host before next() waits.
constexpr size_t kMaxHandedOut = 4;
}  // namespace

DeviceBatches::~DeviceBatches() {
  retire(ahead_);
  retire_handed_out(0);
}

void DeviceBatches::retire_handed_out(size_t keep) {
  while (!handed_out_.empty()) {
    const Event& copied = *handed_out_.front().copied;
    if (!copied.query()) {
      if (handed_out_.size() <= keep) return;
      copied.synchronize();
    }
    handed_out_.pop_front();
  }
}

void DeviceBatches::retire(std::optional<InFlight>& batch) {
  if (batch) batch->copied->synchronize();
  batch.reset();
}

namespace {

// A tensor the host made (MixUp's images and targets) in pinned memory, as PyTorch's pin-memory
// thread puts it, so that its copy to the device is asynchronous too (host work, not a wait).
Tensor pinned(const Tensor& t) {
  if (!t.defined() || t.is_pinned() || !t.device().is_cpu() ||
      t.memory_format() != MemoryFormat::kContiguous) {
    return t;
  }
  return pinned_copy(t);
}

}  // namespace

Batch DeviceBatches::load() {
  if (!prepare_) return loader_.next();
  Batch b = prepare_(loader_.next());
  if (transfer_) b = {pinned(b.images), pinned(b.labels), pinned(b.targets)};
  return b;
}

Batch DeviceBatches::fenced_transfer(const Batch& host) {
  // The copy's memory may come from blocks that work queued on the compute stream still reads:
  // the copy stream first waits for that work (the allocator does not track streams).
  compute_queued_.record();
  compute_queued_.block(&copy_stream_);
  return transfer_(host, device_, copy_stream_);
}

DeviceBatches::InFlight DeviceBatches::load_and_copy() {
  InFlight f;
  f.host = load();
  f.device = fenced_transfer(f.host);
  f.copied = std::make_unique<Event>(device_);
  f.copied->record(&copy_stream_);
  return f;
}

void DeviceBatches::start_epoch(std::vector<int64_t> indices, int64_t epoch, int64_t first_batch) {
  retire(ahead_);
  const int64_t skipped =
      std::min(first_batch * loader_.batch_size(), static_cast<int64_t>(indices.size()));
  indices.erase(indices.begin(), indices.begin() + skipped);
  loader_.start_epoch(std::move(indices), epoch);
  if (non_blocking_ && !loader_.done()) ahead_ = load_and_copy();
}

Batch DeviceBatches::place(const Batch& host) {
  if (!transfer_) return host;
  Batch placed = fenced_transfer(host);
  copy_stream_.synchronize();
  return placed;
}

Batch DeviceBatches::next() {
  if (!transfer_) return load();
  if (!non_blocking_) {
    InFlight now = load_and_copy();
    now.copied->synchronize();
    return now.device;
  }
  retire_handed_out(kMaxHandedOut - 1);
  InFlight& now = handed_out_.emplace_back(ahead_ ? std::move(*ahead_) : load_and_copy());
  ahead_.reset();
  now.copied->block();  // the compute stream waits for the copy, the host does not
  if (!loader_.done()) ahead_ = load_and_copy();
  return now.device;
}

}  // namespace course
