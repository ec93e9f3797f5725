// The capture state of each thread.
#include "common/tensor/capture.h"

#include <optional>

namespace course {

namespace {

thread_local std::optional<detail::Capture> active_capture;
thread_local void* scoped_stream = nullptr;

[[noreturn]] void fail_capture(std::string_view what) {
  throw GraphCaptureError(detail::concat(
      what,
      " inside a graph capture: the host part of a captured step runs only once, so its "
      "result would be frozen into every replay (do it before or after the graph)"));
}

}  // namespace

bool capturing() { return active_capture.has_value(); }

bool capturing_on_host() { return capturing() && active_capture->host_work != nullptr; }

void check_not_capturing(std::string_view what) {
  if (capturing()) fail_capture(what);
}

void refuse_in_capture(std::string_view call) {
  if (!capturing()) return;
  throw GraphCaptureError(detail::concat(
      call, " inside a graph capture on ", active_capture->device.str(),
      ": CUDA's stream capture refuses it (on a GPU the capture would be invalidated); do it "
      "before or after the captured work"));
}

void check_capture_device(Device device) {
  if (capturing() && active_capture->device != device) {
    fail_capture(detail::concat("work on ", device.str(), " (the graph is on ",
                                active_capture->device.str(), ")"));
  }
}

void* current_cuda_stream() { return capturing() ? active_capture->cuda_stream : scoped_stream; }

StreamScope::StreamScope(void* cuda_stream) : previous_(scoped_stream) {
  check_not_capturing("a change of stream");
  scoped_stream = cuda_stream;
}

StreamScope::~StreamScope() { scoped_stream = previous_; }

namespace detail {

void begin_capture(const Capture& capture) {
  COURSE_CHECK(!capturing(), "a graph capture is already under way on this thread");
  active_capture = capture;
}

void end_capture() { active_capture.reset(); }

void record_host_work(std::function<void()> work) {
  if (active_capture->host_work == nullptr) {
    fail_capture(detail::concat("work on the host's cores (the graph is on ",
                                active_capture->device.str(), ")"));
  }
  active_capture->host_work->push_back(std::move(work));
}

void after_each_replay(const void* owner, std::function<void()> hook) {
  std::vector<ReplayHook>& hooks = *active_capture->after_replay;
  for (const ReplayHook& h : hooks) {
    if (h.owner == owner) return;
  }
  hooks.push_back({owner, std::move(hook)});
}

}  // namespace detail
}  // namespace course
