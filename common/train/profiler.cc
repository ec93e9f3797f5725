// Chrome-trace profiler with NVTX ranges.
#include "common/train/profiler.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/core/error.h"

#if COURSE_WITH_CUDA
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#endif

namespace course::train {

Profiler::Profiler(Device device, bool enabled)
    : device_(device), enabled_(enabled), origin_(std::chrono::steady_clock::now()) {}

Profiler::Range::Range(Profiler& profiler, std::string name, bool active)
    : profiler_(profiler),
      name_(std::move(name)),
      active_(active),
      start_(std::chrono::steady_clock::now()) {
#if COURSE_WITH_CUDA
  if (active_ && profiler_.device_.is_cuda()) nvtxRangePushA(name_.c_str());
#endif
}

Profiler::Range::~Range() {
  if (!active_) return;
#if COURSE_WITH_CUDA
  if (profiler_.device_.is_cuda()) {
    cudaDeviceSynchronize();
    nvtxRangePop();
  }
#endif
  const auto end = std::chrono::steady_clock::now();
  using us = std::chrono::duration<double, std::micro>;
  profiler_.events_.push_back(
      {name_, us(start_ - profiler_.origin_).count(), us(end - start_).count()});
}

void Profiler::write(const std::string& path) const {
  nlohmann::json events = nlohmann::json::array();
  for (const Event& e : events_) {
    events.push_back({{"name", e.name},
                      {"ph", "X"},
                      {"ts", e.start_us},
                      {"dur", e.duration_us},
                      {"pid", 0},
                      {"tid", 0},
                      {"cat", device_.str()}});
  }
  const nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp);
    COURSE_CHECK(out.good(), "cannot write the profiler trace ", path);
    out << trace.dump() << "\n";
    COURSE_CHECK(out.good(), "cannot write the profiler trace ", path);
  }
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  COURSE_CHECK(!error, "cannot move the profiler trace into place at ", path, ": ",
               error.message());
}

}  // namespace course::train
