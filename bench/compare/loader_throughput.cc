// The DataLoader at steady state on any dataset the labs read (Fashion-MNIST, CIFAR-10, an
// ImageFolder, tar shards, a packed file): persistent workers, --epochs passes in the format's
// own epoch order, the first a warm-up. Per epoch it prints the first batch's latency (from the
// epoch's start), images/s, and the stored training split's megabytes per second; the last
// epoch's figures end the output ("loader: ..." for compare.sh and loader_formats.sh). With
// --decode-device gpu the workers only read and plan, and the batches are decoded, cropped and
// normalised on --device (device_decode.h): an epoch ends when the device has finished it.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>

#include "common/data/data_loader.h"
#include "common/data/device_decode.h"
#include "common/data/epoch_order.h"
#include "common/data/open_dataset.h"
#include "common/train/lab_flags.h"
#include "common/train/lab_main.h"

namespace {

using namespace course;
namespace fs = std::filesystem;

// Bytes the training split occupies on disk (allocated blocks, so a packed file's empty header
// page does not count); 0 for data that lives in memory.
int64_t stored_bytes(const std::string& data_dir, const std::string& format) {
  const auto allocated = [](const fs::path& file) {
    struct stat st {};
    return ::stat(file.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_blocks) * 512 : 0;
  };
  if (format == "packed") return allocated(fs::path(data_dir) / "train.pack");
  if (format != "folder" && format != "tar") return 0;
  int64_t total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(data_dir) / "train")) {
    if (entry.is_regular_file()) total += allocated(entry.path());
  }
  return total;
}

// The last epoch's figures: its first batch's latency from the epoch's start, and images/s.
struct EpochFigures {
  double first_batch_ms = 0, images_per_s = 0;
};

struct EpochPlan {
  uint32_t seed;
  int64_t epochs;
  double megabytes;  // the stored training split's, for MB/s
};

// Runs the epochs in the format's own order, printing each one's figures; an epoch ends when
// `stream` (the device's decoding, if any) has finished it.
EpochFigures time_epochs(DataLoader& loader, const std::function<Batch()>& next_batch,
                         Stream* stream, const Dataset& train, const OrderOptions& order,
                         const EpochPlan& plan) {
  EpochFigures figures;
  for (int64_t epoch = 0; epoch < plan.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    const auto since_start = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    loader.start_epoch(epoch_order(train, order, plan.seed, epoch), epoch);
    int64_t images = next_batch().labels.numel();
    if (stream) stream->synchronize();
    figures.first_batch_ms = 1e3 * since_start();
    while (!loader.done()) images += next_batch().labels.numel();
    if (stream) stream->synchronize();
    const double seconds = since_start();
    figures.images_per_s = images / seconds;
    std::printf("epoch %lld%s: first batch %.1f ms, %.1f images/s, %.1f MB/s\n",
                static_cast<long long>(epoch), epoch == 0 && plan.epochs > 1 ? " (warm-up)" : "",
                figures.first_batch_ms, figures.images_per_s, plan.megabytes / seconds);
  }
  return figures;
}

}  // namespace

int main(int argc, char** argv) {
  DataFlags data;
  data.num_workers = 2;
  int64_t batch = 64, epochs = 2;
  AugmentPolicyKind policy = AugmentPolicyKind::kNone;
  OrderOptions order;
  CLI::App app("DataLoader images/s and MB/s at steady state, in the storage format's order");
  app.add_option("--data-dir", data.data_dir, "any --data-dir the labs read")->required();
  app.add_option("--format", data.format, "auto, idx, cifar10, folder, tar, packed");
  app.add_option("--batch-size", batch)->check(CLI::PositiveNumber);
  app.add_option("--image-size", data.image_size)->check(CLI::PositiveNumber);
  app.add_option("--num-workers", data.num_workers)->check(CLI::NonNegativeNumber);
  app.add_option("--epochs", epochs, "passes; the first is a warm-up")->check(CLI::Range(1, 100));
  app.add_flag("--augment", data.augment, "RandomResizedCrop and flip");
  train::add_choice(app, "--auto-augment", policy, augment_policy_choices(),
                    "automatic augmentation policy, per image");
  app.add_option("--shuffle-buffer", order.shuffle_buffer);
  app.add_option("--pages-in-memory", order.pages_in_memory);
  std::string device_name = "cpu";
  app.add_option("--device", device_name, "where --decode-device gpu decodes (cuda, sim)");
  train::add_decode_device_flag(app, data);
  train::parse_or_exit(app, argc, argv);
  return train::lab_main([&] {
    const std::string format = data.format == "auto" ? detect_format(data.data_dir) : data.format;
    LabDatasets sets = open_dataset(data);
    sets.train_transform.policy.kind = policy;
    sets.train_transform.train = data.augment || policy != AugmentPolicyKind::kNone;
    sets.train_transform.random_crop = data.augment;
    sets.train_transform.eval_crop_fraction = 1.0f;  // without --augment: the whole image
    check_decode_device(data, *sets.train);
    const Device device = parse_device(device_name);
    require_device(device);
    set_process_device(device);
    std::optional<DeviceDecoder> decoder;
    std::optional<Stream> stream;
    if (data.decode_device == DecodeDevice::kGpu) {
      decoder.emplace(device);
      stream.emplace(device);
    }
    DataLoader loader(sets.train, sets.train_transform, loader_options(data, batch));
    const auto next_batch = [&] {
      Batch b = loader.next();
      return decoder ? decoder->decode(b, *stream) : b;
    };
    const double megabytes = stored_bytes(data.data_dir, format) / 1e6;
    std::printf("%s: %lld training images, %.1f MB stored, %d workers, batch %lld, decoded %s\n",
                format.c_str(), static_cast<long long>(sets.train->size()), megabytes,
                data.num_workers, static_cast<long long>(batch),
                decoder ? ("on " + device.str() + " (" + decoder->describe() + ")").c_str()
                        : "by the workers");
    const EpochFigures last =
        time_epochs(loader, next_batch, stream ? &*stream : nullptr, *sets.train, order,
                    {.seed = data.seed, .epochs = epochs, .megabytes = megabytes});
    if (decoder) std::printf("%s\n", decoder->summary().c_str());
    std::printf("loader: %.1f images/s\nfirst_batch_ms: %.1f\n", last.images_per_s,
                last.first_batch_ms);
  });
}
