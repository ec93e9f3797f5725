// nvJPEG's handles, batched-decode states and calls (compiled with CUDA and nvJPEG).
#include "common/data/nvjpeg_decoder.h"

#include "common/core/error.h"

#if COURSE_WITH_CUDA && COURSE_WITH_NVJPEG
#include <nvjpeg.h>

#include "common/tensor/cuda_check.h"
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

}  // namespace

struct Nvjpeg::Backend {
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  int initialised_for = -1;  // batch size and output format of the state's last initialisation
  nvjpegOutputFormat_t format = NVJPEG_OUTPUT_RGBI;

  // nullptr when nvJPEG has no such backend on this GPU.
  static std::unique_ptr<Backend> create(nvjpegBackend_t backend) {
    auto b = std::make_unique<Backend>();
    if (nvjpegCreateEx(backend, nullptr, nullptr, 0, &b->handle) != NVJPEG_STATUS_SUCCESS) {
      return nullptr;
    }
    const nvjpegStatus_t status = nvjpegJpegStateCreate(b->handle, &b->state);
    COURSE_CHECK(status == NVJPEG_STATUS_SUCCESS,
                 "nvjpegJpegStateCreate failed: ", status_name(status));
    return b;
  }
  ~Backend() {
    if (state != nullptr) nvjpegJpegStateDestroy(state);
    if (handle != nullptr) nvjpegDestroy(handle);
  }
};

Nvjpeg::Nvjpeg(Device device) {
  COURSE_CHECK(device.is_cuda(), "nvJPEG decodes on a GPU, not on ", device.str());
  set_current_device(device);
  hardware_ = Backend::create(NVJPEG_BACKEND_HARDWARE);
  cuda_ = Backend::create(NVJPEG_BACKEND_DEFAULT);
  COURSE_CHECK(cuda_ != nullptr, "nvJPEG could not start on ", device.str());
}

Nvjpeg::~Nvjpeg() = default;

bool Nvjpeg::has_hardware() const { return hardware_ != nullptr; }

bool Nvjpeg::decode(bool hardware, const std::vector<Job>& jobs, int channels, void* stream,
                    std::string& why) {
  Backend& b = hardware && hardware_ ? *hardware_ : *cuda_;
  const nvjpegOutputFormat_t format = channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGBI;
  const int count = static_cast<int>(jobs.size());
  if (b.initialised_for != count || b.format != format) {
    const nvjpegStatus_t status =
        nvjpegDecodeBatchedInitialize(b.handle, b.state, count, 1, format);
    if (status != NVJPEG_STATUS_SUCCESS) {
      why = std::string("nvjpegDecodeBatchedInitialize: ") + status_name(status);
      return false;
    }
    b.initialised_for = count;
    b.format = format;
  }
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
      nvjpegDecodeBatched(b.handle, b.state, data.data(), lengths.data(), outputs.data(),
                          static_cast<cudaStream_t>(stream));
  if (status != NVJPEG_STATUS_SUCCESS) {
    why = std::string("nvjpegDecodeBatched: ") + status_name(status);
    b.initialised_for = -1;  // the state is initialised again before its next use
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
