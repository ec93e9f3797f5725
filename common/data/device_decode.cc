// The workers' half (read, plan, draw) and the device's half (decode, fall back, crop) of the
// GPU data path.
#include "common/data/device_decode.h"

#include <cstdio>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/data/jitter.h"
#include "common/data/nvjpeg_decoder.h"
#include "common/kernels/crop_resize.h"
#include "common/tensor/capture.h"
#include "common/tensor/pinned_staging.h"

namespace course {

void check_device_transforms(const TransformOptions& o) {
  COURSE_CHECK(o.mean.size() == o.std.size() && !o.mean.empty() && o.mean.size() <= 3,
               "decoding on the device normalises 1 to 3 channels, got ", o.mean.size());
  const char* extra = o.policy.kind != AugmentPolicyKind::kNone ? "an automatic augmentation policy"
                      : o.jitter.active()                       ? "the jitter in the workers"
                      : !o.extra_steps.empty()                  ? "a lab's own per-image steps"
                                                                : nullptr;
  COURSE_CHECK(extra == nullptr, "decoding on the device crops, flips and normalises; ", extra,
               " needs the images on the host (--decode-device cpu), or the batch stage on the "
               "device (--aug-device) for the jitter");
}

namespace {

// `image` (H, W, C) u8 decoded by OpenCV from `jpeg` with `channels` channels in RGB order,
// written into `out` (H * W * C bytes); false when OpenCV cannot decode it.
bool decode_on_host(const std::vector<uint8_t>& jpeg, int channels, int height, int width,
                    uint8_t* out) {
  const cv::Mat decoded =
      cv::imdecode(jpeg, channels == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
  if (decoded.empty() || decoded.rows != height || decoded.cols != width) return false;
  cv::Mat view(height, width, CV_8UC(channels), out);
  if (channels == 3) {
    cv::cvtColor(decoded, view, cv::COLOR_BGR2RGB);
  } else {
    decoded.copyTo(view);
  }
  return true;
}

}  // namespace

EncodedSample plan_encoded_sample(const Dataset& data, int64_t index, const TransformOptions& o,
                                  std::mt19937& rng) {
  EncodedSample s;
  s.label = data.label(index);
  std::optional<Dataset::Encoded> encoded = data.encoded(index);
  if (encoded) {
    s.name = std::move(encoded->name);
    s.header = read_jpeg_header(encoded->bytes, s.name);
    s.height = s.header.height;
    s.width = s.header.width;
    if (choose_jpeg_decoder(s.header, false) != JpegDecoder::kHost)
      s.jpeg = std::move(encoded->bytes);
  }
  if (s.jpeg.empty()) {  // stored decoded, not a JPEG, or a JPEG the device cannot decode
    s.pixels = pinned_copy(data.image(index));
    s.height = static_cast<int>(s.pixels.size(0));
    s.width = static_cast<int>(s.pixels.size(1));
    if (s.name.empty()) s.name = "sample " + std::to_string(index);
  }
  // The draws of transform_image's steps, in their order: the crop, then the flip.
  s.crop = {0, 0, s.width, s.height};
  if (o.train && o.random_crop) s.crop = random_resized_crop_box(s.width, s.height, rng);
  if (!o.train) s.crop = center_crop_box(s.width, s.height, o.eval_crop_fraction);
  if (o.train) s.flip = draw_jitter(o.jitter, o.flip, rng).flip;
  return s;
}

DeviceDecoder::DeviceDecoder(Device device) : device_(device) {
  COURSE_CHECK(device.is_accelerator(),
               "--decode-device gpu decodes on the training device, but it is the CPU: train on "
               "a GPU (--device cuda) or decode on the host (--decode-device cpu)");
  if (device.is_cuda()) nvjpeg_ = std::make_unique<detail::Nvjpeg>(device);
}

DeviceDecoder::~DeviceDecoder() {
  for (auto& [done, scratch] : in_use_) done->synchronize();
}

std::string DeviceDecoder::describe() const {
  if (!nvjpeg_) return "OpenCV into " + device_.str() + "'s memory (the simulated nvJPEG)";
  return nvjpeg_->has_hardware() ? "nvJPEG: the hardware decoder, the CUDA decoder for the rest"
                                 : "nvJPEG: the CUDA decoder (this GPU has no JPEG engine)";
}

std::string DeviceDecoder::summary() const {
  const auto n = [](int64_t count) { return std::to_string(count); };
  const std::string device_part = nvjpeg_ ? n(counts_.hardware) + " by nvJPEG's hardware engine, " +
                                                n(counts_.cuda) + " by its CUDA decoder"
                                          : n(counts_.cuda) + " by the simulated decoder (OpenCV)";
  return "decoded on " + device_.str() + ": " + device_part + ", " + n(counts_.host) +
         " by the loader's workers (not decodable there), " + n(counts_.retried_on_host) +
         " on the host after nvJPEG refused them, " + n(counts_.skipped) + " skipped";
}

void DeviceDecoder::keep_until_done(std::vector<Tensor> scratch, const Stream& stream) {
  while (!in_use_.empty() && in_use_.front().first->query()) in_use_.pop_front();
  auto done = std::make_unique<Event>(device_);
  done->record(&stream);
  in_use_.emplace_back(std::move(done), std::move(scratch));
}

struct DeviceDecoder::Plan {
  std::vector<int64_t> offsets;  // of each image in `pixels`, 16-byte aligned
  Tensor pixels;
  std::vector<size_t> by_decoder[2];  // hardware, CUDA
  std::vector<size_t> on_host;
  std::vector<bool> dropped;
  std::vector<Tensor> scratch;  // kept until the copy stream has passed

  uint8_t* image(size_t i) { return pixels.data_as<uint8_t>() + offsets[i]; }
};

DeviceDecoder::Plan DeviceDecoder::place(const EncodedBatch& batch) const {
  const size_t n = batch.samples.size();
  Plan plan;
  plan.offsets.resize(n);
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    plan.offsets[i] = total;
    const EncodedSample& s = batch.samples[i];
    total += (static_cast<int64_t>(s.height) * s.width * batch.channels + 15) / 16 * 16;
  }
  plan.pixels = Tensor::empty({total}, DType::kU8, device_);
  plan.dropped.assign(n, false);
  plan.scratch = {plan.pixels};
  return plan;
}

void DeviceDecoder::route(const EncodedBatch& batch, Plan& plan, const Stream& stream) {
  for (size_t i = 0; i < batch.samples.size(); ++i) {
    const EncodedSample& s = batch.samples[i];
    if (s.pixels.defined()) {
      copy_bytes_async(plan.image(i), device_, s.pixels.data(), Device::cpu(), s.pixels.nbytes(),
                       stream, true);
      ++counts_.host;
    } else if (!nvjpeg_) {
      plan.by_decoder[1].push_back(i);
    } else {
      const bool hardware =
          choose_jpeg_decoder(s.header, nvjpeg_->has_hardware()) == JpegDecoder::kHardware;
      plan.by_decoder[hardware ? 0 : 1].push_back(i);
    }
  }
}

void DeviceDecoder::decode_by(int decoder, const EncodedBatch& batch, Plan& plan,
                              const Stream& stream) {
  const std::vector<size_t>& mine = plan.by_decoder[decoder];
  if (mine.empty()) return;
  const int channels = static_cast<int>(batch.channels);
  size_t failed = 0;
  if (nvjpeg_) {
    std::vector<detail::Nvjpeg::Job> jobs;
    for (size_t i : mine) {
      const EncodedSample& s = batch.samples[i];
      jobs.push_back({s.jpeg.data(), s.jpeg.size(), plan.image(i), s.width});
    }
    std::string why;
    if (!nvjpeg_->decode(decoder == 0, jobs, channels, stream.handle(), why)) {
      if (!said_refusal_) {
        std::fprintf(stderr, "warning: nvJPEG's %s refused a batch of %zu JPEG(s) (%s); %s\n",
                     decoder == 0 ? "hardware engine" : "CUDA decoder", jobs.size(), why.c_str(),
                     decoder == 0 ? "its CUDA decoder takes them" : "the host decodes them");
        said_refusal_ = true;
      }
      failed = jobs.size();
      std::vector<size_t>& retry = decoder == 0 ? plan.by_decoder[1] : plan.on_host;
      retry.insert(retry.end(), mine.begin(), mine.end());
    }
  } else {
    for (size_t i : mine) {
      const EncodedSample& s = batch.samples[i];
      if (!decode_on_host(s.jpeg, channels, s.height, s.width, plan.image(i))) {
        plan.on_host.push_back(i);  // the simulated nvJPEG failed on it: the host tries too
        ++failed;
      }
    }
  }
  (decoder == 0 ? counts_.hardware : counts_.cuda) += static_cast<int64_t>(mine.size() - failed);
}

void DeviceDecoder::decode_rest_on_host(const EncodedBatch& batch, Plan& plan,
                                        const Stream& stream) {
  const int channels = static_cast<int>(batch.channels);
  for (size_t i : plan.on_host) {
    const EncodedSample& s = batch.samples[i];
    Tensor staged = Tensor::empty_pinned({s.height, s.width, channels}, DType::kU8);
    if (decode_on_host(s.jpeg, channels, s.height, s.width, staged.data_as<uint8_t>())) {
      copy_bytes_async(plan.image(i), device_, staged.data(), Device::cpu(), staged.nbytes(),
                       stream, true);
      plan.scratch.push_back(staged);
      ++counts_.retried_on_host;
      continue;
    }
    const std::string message = s.name + " cannot be decoded (its header reads, its data does not)";
    if (!batch.skip_corrupt) throw CorruptSampleError(message);
    std::fprintf(stderr, "warning: skipping a sample: %s\n", message.c_str());
    plan.dropped[i] = true;
    ++counts_.skipped;
  }
}

Batch DeviceDecoder::crop_kept(const EncodedBatch& batch, Plan& plan, const Stream& stream) {
  // The tables of the kept images, and their labels; then the one kernel.
  std::vector<int64_t> images, labels;
  std::vector<int32_t> crops;
  for (size_t i = 0; i < batch.samples.size(); ++i) {
    if (plan.dropped[i]) continue;
    const EncodedSample& s = batch.samples[i];
    COURSE_CHECK(s.crop.x >= 0 && s.crop.y >= 0 && s.crop.width > 0 && s.crop.height > 0 &&
                     s.crop.x + s.crop.width <= s.width && s.crop.y + s.crop.height <= s.height,
                 "the crop of ", s.name, " is outside its ", s.width, " x ", s.height, " pixels");
    images.insert(images.end(), {plan.offsets[i], s.height, s.width});
    crops.insert(crops.end(), {s.crop.x, s.crop.y, s.crop.width, s.crop.height, s.flip ? 1 : 0});
    labels.push_back(s.label);
  }
  const int64_t kept = static_cast<int64_t>(labels.size());
  COURSE_CHECK(kept > 0, "every sample of a batch is unreadable");
  // The tables go up through the thread's pinned staging ring, on the copy stream as the kernel.
  StreamScope on_copy_stream(stream.handle());
  const Tensor image_table = upload_to(device_, images, {kept, 3});
  const Tensor crop_table = upload_to(device_, crops, {kept, 5});
  Batch out;
  out.labels = upload_to(device_, labels, {kept});
  out.images =
      crop_resize_normalize(plan.pixels, image_table, crop_table, static_cast<int>(batch.channels),
                            batch.size, batch.mean, batch.std, DType::kF32, format_);
  plan.scratch.insert(plan.scratch.end(), {image_table, crop_table});
  keep_until_done(std::move(plan.scratch), stream);
  return out;
}

Batch DeviceDecoder::decode(const Batch& host, const Stream& stream) {
  COURSE_CHECK(host.encoded != nullptr, "a batch for the device decoder has no JPEG bytes");
  const EncodedBatch& batch = *host.encoded;
  Plan plan = place(batch);
  route(batch, plan, stream);
  for (int decoder = 0; decoder < 2; ++decoder) decode_by(decoder, batch, plan, stream);
  decode_rest_on_host(batch, plan, stream);
  return crop_kept(batch, plan, stream);
}

}  // namespace course
