// nvJPEG's handles, batched-decode states and calls (compiled with CUDA and nvJPEG).
#include "common/data/nvjpeg_decoder.h"

#include "common/core/error.h"

#if COURSE_WITH_CUDA && COURSE_WITH_NVJPEG
#include <nvjpeg.h>

#include <map>
#include <utility>

#include "common/tensor/cuda_check.h"
#include "common/tensor/host_waits.h"
#endif

namespace course::detail {

#if COURSE_WITH_CUDA && COURSE_WITH_NVJPEG

namespace {

const char* status_name(nvjpegStatus_t status) {
  switch (status) {
    case NVJPEG_STATUS_SUCCESS:
      return "success";
    case NVJPEG_STATUS_BAD_JPEG:
      return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "allocation failed";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "not on this GPU";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "not implemented for this backend";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return "incomplete bitstream";
    default:
      return "error";
  }
}

// Where nvJPEG's buffers come from: it regrows them as larger images come, and with CUDA's
// default allocation each regrowth's free would wait for the GPU. The device's are
// stream-ordered (cudaMallocAsync: a free waits for nothing) where the GPU has memory pools,
// else CUDA's own, whose free is counted as the host wait it is (host_waits.h), as is the free
// of a page-locked buffer.
struct BufferSource {
  Device device;
  bool stream_ordered;
};

int device_malloc(void* source, void** ptr, size_t size, cudaStream_t stream) {
  const bool ordered = static_cast<const BufferSource*>(source)->stream_ordered;
  return (ordered ? cudaMallocAsync(ptr, size, stream) : cudaMalloc(ptr, size)) != cudaSuccess;
}

int device_free(void* source, void* ptr, size_t, cudaStream_t stream) {
  const auto* from = static_cast<const BufferSource*>(source);
  if (from->stream_ordered) return cudaFreeAsync(ptr, stream) != cudaSuccess;
  note_host_synchronization(from->device);
  return cudaFree(ptr) != cudaSuccess;
}

int pinned_malloc(void*, void** ptr, size_t size, cudaStream_t) {
  return cudaHostAlloc(ptr, size, cudaHostAllocDefault) != cudaSuccess;
}

int pinned_free(void* source, void* ptr, size_t, cudaStream_t) {
  note_host_synchronization(static_cast<const BufferSource*>(source)->device);
  return cudaFreeHost(ptr) != cudaSuccess;
}

}  // namespace

// One backend's handle and its batched-decode states, one for each batch size and output format
// it has decoded: nvjpegDecodeBatched decodes exactly the batch its state was initialised for,
// and initialising a state again (whenever the split between the hardware engine and the CUDA
// decoder changes a batch's size) frees its buffers, which waits for the GPU. Each state is
// initialised once.
struct Nvjpeg::Backend {
  BufferSource buffers;
  nvjpegHandle_t handle = nullptr;
  std::map<std::pair<int, nvjpegOutputFormat_t>, nvjpegJpegState_t> states;

  // nullptr when nvJPEG has no such backend on this GPU.
  static std::unique_ptr<Backend> create(nvjpegBackend_t backend, Device device) {
    int pools = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device.index));
    auto b = std::make_unique<Backend>();
    b->buffers = {device, pools != 0};
    nvjpegDevAllocatorV2_t device_buffers{device_malloc, device_free, &b->buffers};
    nvjpegPinnedAllocatorV2_t pinned_buffers{pinned_malloc, pinned_free, &b->buffers};
    if (nvjpegCreateExV2(backend, &device_buffers, &pinned_buffers, 0, &b->handle) !=
        NVJPEG_STATUS_SUCCESS) {
      return nullptr;
    }
    return b;
  }
  ~Backend() {
    for (const auto& [key, state] : states) nvjpegJpegStateDestroy(state);
    if (handle != nullptr) nvjpegDestroy(handle);
  }

  // The state for `count` images in `format`, made and initialised on first use; nullptr (with
  // `why`) when nvJPEG refuses.
  nvjpegJpegState_t state_for(int count, nvjpegOutputFormat_t format, std::string& why) {
    auto found = states.find({count, format});
    if (found != states.end()) return found->second;
    nvjpegJpegState_t state = nullptr;
    nvjpegStatus_t status = nvjpegJpegStateCreate(handle, &state);
    if (status == NVJPEG_STATUS_SUCCESS) {
      status = nvjpegDecodeBatchedInitialize(handle, state, count, 1, format);
      if (status != NVJPEG_STATUS_SUCCESS) nvjpegJpegStateDestroy(state);
    }
    if (status != NVJPEG_STATUS_SUCCESS) {
      why = std::string("nvjpegDecodeBatchedInitialize: ") + status_name(status);
      return nullptr;
    }
    return states[{count, format}] = state;
  }
};

Nvjpeg::Nvjpeg(Device device) {
  COURSE_CHECK(device.is_cuda(), "nvJPEG decodes on a GPU, not on ", device.str());
  set_current_device(device);
  hardware_ = Backend::create(NVJPEG_BACKEND_HARDWARE, device);
  cuda_ = Backend::create(NVJPEG_BACKEND_DEFAULT, device);
  COURSE_CHECK(cuda_ != nullptr, "nvJPEG could not start on ", device.str());
}

Nvjpeg::~Nvjpeg() = default;

bool Nvjpeg::has_hardware() const { return hardware_ != nullptr; }

bool Nvjpeg::decode(bool hardware, const std::vector<Job>& jobs, int channels, void* stream,
                    std::string& why) {
  Backend& b = hardware && hardware_ ? *hardware_ : *cuda_;
  const nvjpegOutputFormat_t format = channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGBI;
  const int count = static_cast<int>(jobs.size());
  nvjpegJpegState_t state = b.state_for(count, format, why);
  if (state == nullptr) return false;
  std::vector<const unsigned char*> data(jobs.size());
  std::vector<size_t> lengths(jobs.size());
  std::vector<nvjpegImage_t> outputs(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    data[i] = jobs[i].jpeg;
    lengths[i] = jobs[i].length;
    outputs[i] = {};
    outputs[i].channel[0] = jobs[i].destination;
    outputs[i].pitch[0] = static_cast<size_t>(jobs[i].width) * channels;
  }
  const nvjpegStatus_t status =
      nvjpegDecodeBatched(b.handle, state, data.data(), lengths.data(), outputs.data(),
                          static_cast<cudaStream_t>(stream));
  if (status != NVJPEG_STATUS_SUCCESS) {
    why = std::string("nvjpegDecodeBatched: ") + status_name(status);
    b.states.erase({count, format});  // made again at its next use
    nvjpegJpegStateDestroy(state);
    return false;
  }
  return true;
}

#else

struct Nvjpeg::Backend {};

Nvjpeg::Nvjpeg(Device device) {
  throw Error("decoding JPEGs on " + device.str() + " needs nvJPEG, which this build lacks (" +
              (cuda_compiled()
                   ? std::string("./setup.sh installs it where the CUDA toolkit has none, "
                                 "then build again")
                   : std::string("a build without CUDA")) +
              "); --decode-device cpu decodes on the host");
}

Nvjpeg::~Nvjpeg() = default;

bool Nvjpeg::has_hardware() const { return false; }

bool Nvjpeg::decode(bool, const std::vector<Job>&, int, void*, std::string& why) {
  why = "no nvJPEG in this build";
  return false;
}

#endif

}  // namespace course::detail
