// Day 3's GPU data path, the role DALI plays in the course: JPEG bytes become the network's
// input on the training device, not on the host.
//   - In the loader's workers (plan_encoded_sample): each sample's stored bytes are read, their
//     header planned (jpeg_header.h), and its crop and flip drawn from the sample's generator
//     exactly as the CPU path's transform_image draws them, so both paths crop the same boxes.
//     A file the device cannot decode (CMYK, arithmetic coding, 12 bits; a PNG in a folder) is
//     decoded there by OpenCV and travels as pixels.
//   - On the device (DeviceDecoder, DeviceBatches' transfer): nvJPEG's batched decode into one
//     buffer (the hardware engine for the files it takes, where the GPU has one, the CUDA
//     decoder for the rest), the worker-decoded pixels copied beside them, then one kernel
//     crops, resizes, flips, normalises and lays the batch out (common/kernels/crop_resize.h),
//     all queued on the copy stream. On the simulated accelerator OpenCV stands in for nvJPEG,
//     writing into device memory, so CI runs every other part of the path.
// A batch nvJPEG's hardware engine refuses goes to its CUDA decoder, one that refuses to the
// host (said once); a file no decoder reads is a CorruptSampleError, or with skip_corrupt is
// reported and left out of its batch.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/data/batch.h"
#include "common/data/dataset.h"
#include "common/data/jpeg_header.h"
#include "common/data/transforms.h"
#include "common/tensor/stream.h"

namespace course {

// One sample as a worker leaves it for the device.
struct EncodedSample {
  std::vector<uint8_t> jpeg;  // the file, when the device decodes it
  Tensor pixels;              // else (H, W, C) u8 decoded on the host, pinned
  JpegHeader header;          // of `jpeg`
  int height = 0, width = 0;
  CropBox crop;
  bool flip = false;
  int64_t label = 0;
  std::string name;
};

// A batch of them, with what the device needs to finish it.
struct EncodedBatch {
  std::vector<EncodedSample> samples;
  int64_t channels = 0, size = 0;
  std::vector<float> mean, std;
  bool skip_corrupt = false;
};

// The transforms the device path applies: the crop (random, central or none) resized to size,
// the flip, the normalisation. Throws naming what else `options` asks for (jitter, a policy,
// extra steps: the lab's --aug-device applies the jitter to the decoded batch).
void check_device_transforms(const TransformOptions& options);

// Reads sample `index` of `data`, plans it and draws its crop and flip with `rng` (seeded as
// the loader seeds the CPU path). Throws CorruptSampleError naming it.
EncodedSample plan_encoded_sample(const Dataset& data, int64_t index,
                                  const TransformOptions& options, std::mt19937& rng);

namespace detail {
class Nvjpeg;
}

// The device half: a DeviceBatches transfer (device_batches.h) for batches whose `encoded` is
// set. The GPU needs a build with nvJPEG (setup.sh installs it where the toolkit lacks it).
class DeviceDecoder {
 public:
  explicit DeviceDecoder(Device device);  // throws on the CPU, or a GPU build without nvJPEG
  ~DeviceDecoder();
  DeviceDecoder(const DeviceDecoder&) = delete;
  DeviceDecoder& operator=(const DeviceDecoder&) = delete;

  // (N, C, size, size) f32 images in `format` and their labels, queued on `stream`.
  Batch decode(const Batch& host, const Stream& stream);
  void set_memory_format(MemoryFormat format) { format_ = format; }

  // Images decoded so far, per decoder (hardware, CUDA, host; on the simulated accelerator the
  // CUDA count is OpenCV's), and those nvJPEG failed on and the host decoded instead.
  struct Counts {
    int64_t hardware = 0, cuda = 0, host = 0, retried_on_host = 0, skipped = 0;
  };
  const Counts& counts() const { return counts_; }
  std::string describe() const;  // which decoders this device has
  std::string summary() const;   // the counts, in a line

 private:
  // One batch under way: each image's place in one device buffer, the images each decoder
  // takes, those left to the host, those dropped (defined in device_decode.cc).
  struct Plan;
  Plan place(const EncodedBatch& batch) const;
  // Each image to its decoder (a worker's pixels are copied up at once).
  void route(const EncodedBatch& batch, Plan& plan, const Stream& stream);
  // Decoder 0 (the hardware engine) or 1 (the CUDA decoder, or OpenCV on the simulated
  // accelerator); what it refuses goes to the next, the CUDA decoder's to the host.
  void decode_by(int decoder, const EncodedBatch& batch, Plan& plan, const Stream& stream);
  // The host's second try; a file it cannot decode either is corrupt.
  void decode_rest_on_host(const EncodedBatch& batch, Plan& plan, const Stream& stream);
  // The kept images cropped, resized and normalised by one kernel, with their labels.
  Batch crop_kept(const EncodedBatch& batch, Plan& plan, const Stream& stream);
  void keep_until_done(std::vector<Tensor> scratch, const Stream& stream);

  Device device_;
  MemoryFormat format_ = MemoryFormat::kContiguous;
  std::unique_ptr<detail::Nvjpeg> nvjpeg_;
  Counts counts_;
  bool said_refusal_ = false;  // nvJPEG's refusals are said once
  // Device buffers the copy stream may still read, freed once their event has passed.
  std::deque<std::pair<std::unique_ptr<Event>, std::vector<Tensor>>> in_use_;
};

}  // namespace course
