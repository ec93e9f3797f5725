// The grid of a single-source kernel's GPU launch (launch.h), as a plain function so that the
// CPU tests can check every hand-written kernel's launch at the shapes the course trains on:
// an H100 has 132 SMs, and a launch of fewer than two blocks per SM leaves part of the GPU idle
// for its whole duration.
//
// A LaunchLog records the launches of the calling thread instead of running them (and
// reductions return their identity): a test calls a kernel on tensors of a ResNet-50 or GPT-2
// batch without computing it, and checks each recorded plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace course {

inline constexpr int kThreadsPerBlock = 256;
inline constexpr int kMinThreadsPerBlock = 32;  // a warp
inline constexpr int64_t kMaxBlocks = 4096;
inline constexpr int kReferenceSms = 132;  // an H100 SXM

struct LaunchPlan {
  int64_t blocks;
  int threads;  // per block
};

// n indices, each touching about `work_per_index` elements: 256 threads a block, at most 4096
// blocks (grid-stride beyond); indices that each carry work (a row, a chunk of a column) spread
// over smaller blocks (down to a warp) until the grid has two blocks per SM.
LaunchPlan plan_launch(int64_t n, int64_t work_per_index);

// A warp per row (launch.h's for_each_row): eight rows a block, fewer (down to one) until the
// grid has two blocks per SM.
LaunchPlan plan_row_launch(int64_t rows);

struct RecordedLaunch {
  std::string kernel;         // the functor's type
  int64_t n, work_per_index;  // indices (rows of a row kernel), elements each
  LaunchPlan plan;
};

class LaunchLog {
 public:
  LaunchLog();   // starts recording this thread's launches (not nested)
  ~LaunchLog();  // and stops
  LaunchLog(const LaunchLog&) = delete;
  LaunchLog& operator=(const LaunchLog&) = delete;
  const std::vector<RecordedLaunch>& launches() const { return launches_; }

  // The calling thread's log while one records, else null (launch.h asks before each launch).
  static LaunchLog* active();
  void record(std::string kernel, int64_t n, int64_t work_per_index);
  void record(std::string kernel, int64_t n, int64_t work_per_index, LaunchPlan plan);

 private:
  std::vector<RecordedLaunch> launches_;
};

}  // namespace course
