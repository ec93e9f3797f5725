// Launch grids, and the log of planned launches.
#include "common/kernels/launch_plan.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <utility>

#include "common/core/error.h"

namespace course {

LaunchPlan plan_launch(int64_t n, int64_t work_per_index) {
  int threads = kThreadsPerBlock;
  const int64_t wanted_blocks = 2 * kReferenceSms;
  if (work_per_index > 1) {
    while (threads > kMinThreadsPerBlock && (n + threads - 1) / threads < wanted_blocks) {
      threads /= 2;
    }
  }
  const int64_t blocks = std::clamp<int64_t>((n + threads - 1) / threads, 1, kMaxBlocks);
  return {blocks, threads};
}

LaunchPlan plan_row_launch(int64_t rows) {
  constexpr int kWarp = kMinThreadsPerBlock;
  int threads = kThreadsPerBlock;
  while (threads > kWarp && (rows * kWarp + threads - 1) / threads < 2 * kReferenceSms) {
    threads /= 2;
  }
  return {std::clamp<int64_t>((rows * kWarp + threads - 1) / threads, 1, kMaxBlocks), threads};
}

namespace {
thread_local LaunchLog* recording = nullptr;
}  // namespace

LaunchLog::LaunchLog() {
  COURSE_CHECK(recording == nullptr, "launch logs do not nest");
  recording = this;
}

LaunchLog::~LaunchLog() { recording = nullptr; }

LaunchLog* LaunchLog::active() { return recording; }

void LaunchLog::record(std::string kernel, int64_t n, int64_t work_per_index) {
  record(std::move(kernel), n, work_per_index, plan_launch(n, work_per_index));
}

void LaunchLog::record(std::string kernel, int64_t n, int64_t work_per_index, LaunchPlan plan) {
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> readable(
      abi::__cxa_demangle(kernel.c_str(), nullptr, nullptr, &status), &std::free);
  if (status == 0) kernel = readable.get();
  launches_.push_back({kernel, n, work_per_index, plan});
}

}  // namespace course
