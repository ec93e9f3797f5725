// Images per second of the course's DataLoader on an ImageFolder (JPEG decoding,
// RandomResizedCrop, flip, normalisation, batching) over one epoch, for the side-by-side
// comparison with torchvision's ImageFolder and torch.utils.data.DataLoader.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "common/data/data_loader.h"
#include "common/data/image_folder.h"
#include "common/data/permutation.h"
#include "common/train/lab_flags.h"
#include "common/train/lab_main.h"

int main(int argc, char** argv) {
  using namespace course;
  std::string folder;
  int64_t batch = 64, size = 56;
  int workers = 2;
  CLI::App app("DataLoader images/s over one epoch of an ImageFolder");
  app.add_option("--data-dir", folder, "class folders of images")->required();
  app.add_option("--batch-size", batch)->check(CLI::PositiveNumber);
  app.add_option("--image-size", size)->check(CLI::PositiveNumber);
  app.add_option("--num-workers", workers)->check(CLI::NonNegativeNumber);
  train::parse_or_exit(app, argc, argv);
  return train::lab_main([&] {
    auto source = std::make_shared<ImageFolder>(folder);
    DataLoader loader(source,
                      {.size = size,
                       .train = true,
                       .mean = {0.485f, 0.456f, 0.406f},
                       .std = {0.229f, 0.224f, 0.225f}},
                      {.batch_size = batch, .num_workers = workers, .pin_memory = false});
    const auto start = std::chrono::steady_clock::now();
    loader.start_epoch(epoch_permutation(source->size(), 0, 0), 0);
    int64_t images = 0;
    while (!loader.done()) images += loader.next().labels.numel();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("loader: %.1f images/s (%lld images in %.3f s)\n", images / seconds,
                static_cast<long long>(images), seconds);
  });
}
