// The rank's training images: the batch stage, the checks of a rank's share, and the loader and
// device batches over the augmented dataset.
#include "day3_data/rank_images.h"

#include <functional>
#include <string>
#include <vector>

#include "common/core/error.h"
#include "common/data/batch_augment.h"
#include "common/data/epoch_order.h"
#include "common/kernels/batch_mix.h"
#include "common/train/gradient_accumulation.h"
#include "day3_data/exercises.h"

namespace day3 {

using namespace course;

namespace {

// What the loader's workers do to each training image, in torchvision's order.
void set_worker_augmentation(const LabOptions& o, TransformOptions& t) {
  const AugmentPolicy policy = o.policy();
  const JitterOptions jitter = o.aug_device ? JitterOptions{} : o.jitter();
  if (!t.train) t.random_crop = false;  // in-memory images crop only with --augment
  t.train = t.train || policy.kind != AugmentPolicyKind::kNone || jitter.active();
  t.flip = !o.aug_device;
  t.jitter = jitter;
  t.policy = policy;
}

// TP3.5's order of a packed file, drawn from (seed, epoch).
std::vector<int64_t> trainee_page_order(const std::vector<int64_t>& sample_pages,
                                        int64_t pages_in_memory, uint32_t seed, int64_t epoch) {
  std::seed_seq seeds{seed, static_cast<uint32_t>(epoch)};
  std::mt19937 rng(seeds);
  return quasi_random_pages(sample_pages, pages_in_memory, rng);
}

// The training images this rank holds in an epoch: its span of the epoch's order, checked
// against --drop-last, --accumulate and mixing's even batches.
int64_t rank_samples(const LabOptions& o, const Dataset& train, int ranks) {
  const int64_t samples = rank_span_size(train.size(), ranks, o.drop_last);
  COURSE_CHECK(samples > 0, "--drop-last leaves no training image for each of ", ranks, " ranks");
  const int64_t step_batch = o.batch_size * o.accumulate;
  COURSE_CHECK(!o.mixing() || o.drop_last || samples % step_batch % 2 == 0,
               "--mixup and --cutmix need even batches, but the epoch's last batch has ",
               samples % step_batch, " images", ranks > 1 ? " on each rank" : "",
               ": add --drop-last");
  train::check_micro_batches(samples, step_batch, o.accumulate, o.drop_last);
  return samples;
}

LabDatasets augmented_dataset(const LabOptions& o) {
  LabDatasets data = open_dataset(o, group_members);
  check_decode_device(o, *data.train);
  set_worker_augmentation(o, data.train_transform);
  return data;
}

}  // namespace

BatchStage::BatchStage(const LabOptions& o, const TransformOptions& transform, int64_t classes,
                       int rank)
    : o_(o),
      transform_(transform),
      mix_(o.mix_options()),
      classes_(classes),
      rng_(o.seed + 3 + 1000003u * static_cast<uint32_t>(rank)) {}

Batch BatchStage::operator()(Batch b) {
  if (o_.aug_device) {
    b.images = jitter_batch(b.images, o_.jitter(), transform_.mean, transform_.std, rng_);
  }
  if (!o_.mixing()) return b;
  const MixPlan plan =
      plan_batch_mix(b.images.size(0), b.images.size(2), b.images.size(3), mix_, rng_, cutmix_cut);
  if (b.images.device().is_cpu()) {
    b.images = mix_images(b.images, plan);
    check_class_labels(b.labels, classes_);
    b.targets = Tensor::from_vector(
        mixed_targets(b.labels.to_vector<int64_t>(), plan.lambdas, classes_, o_.label_smoothing),
        {b.images.size(0), classes_});
  } else {
    MixedBatch mixed = mix_batch(b.images, b.labels, plan, classes_, o_.label_smoothing);
    b.images = std::move(mixed.images);
    b.targets = std::move(mixed.targets);
  }
  return b;
}
RankImages::RankImages(const LabOptions& o, Device device, int rank, int ranks)
    : data(augmented_dataset(o)),
      samples(rank_samples(o, *data.train, ranks)),
      step_batch(o.batch_size * o.accumulate),
      steps_per_epoch(batches_per_epoch(samples, step_batch, o.drop_last)),
      stage(o, data.train_transform, data.train->num_classes(), rank),
      loader(data.train, data.train_transform, loader_options(o, step_batch)),
      decoder(o.decode_device == DecodeDevice::kGpu ? std::optional<DeviceDecoder>(device)
                                                    : std::nullopt),
      batches(loader, device, o.non_blocking, transfer(device),
              o.mixing() && !o.aug_device ? DeviceBatches::Prepare(std::ref(stage))
                                          : DeviceBatches::Prepare()) {
  if (decoder && o.channels_last) decoder->set_memory_format(MemoryFormat::kChannelsLast);
}

void RankImages::start_epoch(const LabOptions& o, int64_t epoch, int64_t first_batch, int rank,
                             int ranks) {
  const OrderOptions order{.shuffle_buffer = o.shuffle_buffer,
                           .pages_in_memory = o.pages_in_memory};
  batches.start_epoch(rank_span(epoch_order(*data.train, order, o.seed, epoch, trainee_page_order),
                                rank, ranks, o.drop_last),
                      epoch, first_batch);
}

DeviceBatches::Transfer RankImages::transfer(Device device) {
  if (decoder) {
    return [this](const Batch& host, Device to, const Stream& stream) {
      return host.encoded ? decoder->decode(host, stream) : copy_to_device(host, to, stream);
    };
  }
  return device.is_cpu() ? DeviceBatches::Transfer() : DeviceBatches::Transfer(copy_to_device);
}

}  // namespace day3
