// Streams and events on the CPU, the GPU and the simulated accelerator (whose work is done by
// the time it is queued: a stream there is empty, an event a clock reading, as on the CPU).
// While this thread captures a graph, every device refuses what CUDA's stream capture refuses
// (a synchronisation, an event's query or time): on a GPU such a call would invalidate the
// capture, so the simulated accelerator refuses it too and CI sees the mistake.
#include "common/tensor/stream.h"

#include "common/core/error.h"
#include "common/tensor/capture.h"
#include "common/tensor/host_waits.h"

#if COURSE_WITH_CUDA
#include "common/tensor/cuda_check.h"
#endif

namespace course {

Stream::Stream(Device device) : device_(device) {
  require_device(device);
#if COURSE_WITH_CUDA
  if (device.is_cuda()) {
    set_current_device(device);
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    handle_ = stream;
  }
#endif
}

Stream::~Stream() {
#if COURSE_WITH_CUDA
  if (handle_) cudaStreamDestroy(static_cast<cudaStream_t>(handle_));
#endif
}

void Stream::synchronize() const {
  refuse_in_capture("a stream's synchronisation (cudaStreamSynchronize)");
  note_host_synchronization(device_);
#if COURSE_WITH_CUDA
  if (handle_) CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(handle_)));
#endif
}

Event::Event(Device device) : device_(device) {
  require_device(device);
#if COURSE_WITH_CUDA
  if (device.is_cuda()) {
    set_current_device(device);
    cudaEvent_t event;
    CUDA_CHECK(cudaEventCreate(&event));
    handle_ = event;
  }
#endif
}

Event::~Event() {
#if COURSE_WITH_CUDA
  if (handle_) cudaEventDestroy(static_cast<cudaEvent_t>(handle_));
#endif
}

#if COURSE_WITH_CUDA
namespace {
// `stream`, or without one the thread's current stream outside a capture (a StreamScope's, else
// the legacy default stream); during a capture the default stream, as before the scope existed.
cudaStream_t stream_or_current(const Stream* stream) {
  if (stream) return static_cast<cudaStream_t>(stream->handle());
  return static_cast<cudaStream_t>(capturing() ? nullptr : current_cuda_stream());
}
}  // namespace
#endif

void Event::record(const Stream* stream) {
  COURSE_CHECK(stream == nullptr || stream->device() == device_, "event on ", device_.str(),
               " recorded on a stream of ", stream->device().str());
  recorded_ = true;
#if COURSE_WITH_CUDA
  if (handle_) {
    CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(handle_), stream_or_current(stream)));
    return;
  }
#endif
  stamp_ = std::chrono::steady_clock::now();
}

void Event::synchronize() const {
  refuse_in_capture("an event's synchronisation (cudaEventSynchronize)");
  note_host_synchronization(device_);
#if COURSE_WITH_CUDA
  if (handle_) CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(handle_)));
#endif
}

bool Event::query() const {
  refuse_in_capture("an event's query (cudaEventQuery)");
#if COURSE_WITH_CUDA
  if (handle_ && recorded_) {
    const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(handle_));
    if (status == cudaErrorNotReady) return false;
    CUDA_CHECK(status);
  }
#endif
  return true;
}

void Event::block(const Stream* stream) const {
  COURSE_CHECK(recorded_, "a stream cannot wait for an event never recorded");
#if COURSE_WITH_CUDA
  if (handle_) {
    CUDA_CHECK(
        cudaStreamWaitEvent(stream_or_current(stream), static_cast<cudaEvent_t>(handle_), 0));
  }
#endif
  (void)stream;
}

float Event::elapsed_ms(const Event& later) const {
  refuse_in_capture("the time between two events (cudaEventElapsedTime)");
  COURSE_CHECK(recorded_ && later.recorded_, "elapsed time between events not both recorded");
  COURSE_CHECK(device_ == later.device_, "elapsed time between events on different devices");
#if COURSE_WITH_CUDA
  if (handle_) {
    for (const Event* e : {this, &later}) {
      if (!e->query()) e->synchronize();
    }
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(handle_),
                                    static_cast<cudaEvent_t>(later.handle_)));
    return ms;
  }
#endif
  return std::chrono::duration<float, std::milli>(later.stamp_ - stamp_).count();
}

}  // namespace course
