// The quantization run: calibration, the int8 networks, their accuracy and speed against f32.
#include "day4_large_models/compression/quantize_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common/core/format.h"
#include "common/core/launch_rank.h"
#include "common/data/data_loader.h"
#include "common/data/distributed_sampler.h"
#include "common/train/evaluate.h"
#include "day4_large_models/compression/activation_range.h"
#include "day4_large_models/compression/inference_network.h"
#include "day4_large_models/compression/trained_model.h"

namespace day4 {

using namespace course;

namespace {

// The first `calibration_batches` batches of a shuffled pass over the training images, with the
// test-time transform, on the device.
std::vector<Tensor> calibration_images(const QuantizeOptions& o, const LabDatasets& data,
                                       Device device) {
  DataLoader loader(data.train, data.val_transform, loader_options(o, o.batch_size));
  loader.start_epoch(
      distributed_sample({.dataset_size = data.train->size(), .seed = o.seed}, 0, 1, 0), 0);
  std::vector<Tensor> images;
  while (static_cast<int64_t>(images.size()) < o.calibration_batches && !loader.done()) {
    images.push_back(loader.next().images.to(device));
  }
  return images;
}

// Images per second of the median of `passes` timed passes of model.forward over `images`,
// after one untimed pass (primitives made, caches warm). Reading the last logits back waits for
// a GPU's work.
double images_per_second(nn::Module& model, const std::vector<Tensor>& images, int64_t passes) {
  int64_t count = 0;
  for (const Tensor& x : images) count += x.size(0);
  std::vector<double> seconds;
  for (int64_t pass = 0; pass <= passes; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    Tensor logits;
    for (const Tensor& x : images) logits = model.forward(x);
    logits.to(Device::cpu());
    if (pass > 0) {
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  std::nth_element(seconds.begin(),
                   seconds.begin() + static_cast<std::ptrdiff_t>(seconds.size() / 2),
                   seconds.end());
  return static_cast<double>(count) / seconds[seconds.size() / 2];
}

std::vector<Calibration> methods(const std::string& name) {
  if (name == "minmax") return {Calibration::kMinMax};
  if (name == "percentile") return {Calibration::kPercentile};
  return {Calibration::kMinMax, Calibration::kPercentile};
}

// Each fused layer's input range over the calibration images, printed.
std::vector<ActivationRange> calibrate(InferenceNetwork& fused, const std::vector<Tensor>& images,
                                       const QuantizeOptions& o) {
  std::vector<ActivationRange> ranges(fused.fused_layers());
  fused.set_input_observer([&](size_t layer, const Tensor& x) { ranges[layer].observe(x); });
  for (const Tensor& x : images) fused.forward(x);
  fused.set_input_observer({});
  for (size_t layer = 0; layer < ranges.size(); ++layer) {
    std::printf("  layer %zu, %s: inputs up to %s, %s of |x| %s\n", layer + 1,
                fused.describe(layer).c_str(), format_number(ranges[layer].largest()).c_str(),
                calibration_name(Calibration::kPercentile, o.percentile).c_str(),
                format_number(ranges[layer].percentile(o.percentile)).c_str());
  }
  return ranges;
}

// The rows against the second (f32 folded and fused: the same kernels as int8's).
void print_quantize_table(const std::vector<QuantizeRow>& rows) {
  const double reference = rows[1].images_per_second;
  std::printf(
      "\n| network | test accuracy | images/s | speed-up over f32 fused |\n"
      "| --- | ---: | ---: | ---: |\n");
  for (const QuantizeRow& r : rows) {
    std::printf("| %s | %s%% | %.0f | %.2fx |\n", r.network.c_str(),
                format_percent(r.accuracy).c_str(), r.images_per_second,
                r.images_per_second / reference);
  }
}

}  // namespace

std::vector<QuantizeRow> run_quantization(const QuantizeOptions& o) {
  course::check_alike_on_every_rank([&] { validate(o); });
  const Device device = named_or_default_device(o.device);
  require_device(device);
  const LabDatasets data = open_dataset(o);
  const auto trained = load_trained(o.trained, o.model, "--trained", *data.train, device);
  InferenceNetwork fused(*trained, device);

  const std::vector<Tensor> images = calibration_images(o, data, device);
  std::printf("%s (%s), %s parameters; calibration on %zu training batches of %lld, on %s\n",
              o.model.c_str(), o.trained.c_str(),
              std::to_string(trained->parameter_count()).c_str(), images.size(),
              static_cast<long long>(o.batch_size), device.str().c_str());
  const std::vector<ActivationRange> ranges = calibrate(fused, images, o);

  struct Candidate {
    std::string name;
    nn::Module* model;
  };
  std::vector<InferenceNetwork> int8;
  std::vector<Candidate> candidates = {{o.model + " f32 as trained", trained.get()},
                                       {o.model + " f32, batch norm folded, fused", &fused}};
  for (const Calibration method : methods(o.calibration)) {
    std::vector<float> scales;
    for (const ActivationRange& r : ranges) scales.push_back(r.scale(method, o.percentile));
    int8.push_back(fused.quantized(scales));
  }
  size_t k = 0;
  for (const Calibration method : methods(o.calibration)) {
    candidates.push_back(
        {o.model + " int8, " + calibration_name(method, o.percentile), &int8[k++]});
  }

  const auto place = [device](const Batch& host) {
    return Batch{host.images.to(device), host.labels.to(device), {}};
  };
  std::vector<QuantizeRow> rows;
  for (const Candidate& c : candidates) {
    rows.push_back(
        {c.name, train::evaluate(*c.model, data.val, data.val_transform, o, 0, 1, place).accuracy(),
         images_per_second(*c.model, images, o.timing_passes)});
  }
  print_quantize_table(rows);
  return rows;
}

}  // namespace day4
