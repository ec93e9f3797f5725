// nvJPEG's batched decoding behind a header without CUDA types (device_decode.cc's GPU part):
// one library handle per backend, the hardware engine's only where the GPU has one
// (nvjpegCreateExV2 fails elsewhere), each with its batched-decode state, on the calling thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/tensor/device.h"

namespace course::detail {

class Nvjpeg {
 public:
  // Throws where this build has no nvJPEG, saying how to get it.
  explicit Nvjpeg(Device device);
  ~Nvjpeg();
  Nvjpeg(const Nvjpeg&) = delete;
  Nvjpeg& operator=(const Nvjpeg&) = delete;

  bool has_hardware() const;

  struct Job {
    const uint8_t* jpeg;
    size_t length;
    uint8_t* destination;  // device memory for height x width x channels bytes, rows packed
    int width;
  };
  // Queues the jobs' decoding by the hardware engine (`hardware`, where there is one) or the
  // CUDA decoder on the cudaStream_t `stream`
  // as interleaved RGB (channels 3) or grey (1); returns false when nvJPEG refused the batch
  // (the caller decodes it elsewhere) and `why` says how.
  bool decode(bool hardware, const std::vector<Job>& jobs, int channels, void* stream,
              std::string& why);

 private:
  struct Backend;
  std::unique_ptr<Backend> hardware_, cuda_;
};

}  // namespace course::detail
