// The single-source launchers every hand-written kernel goes through.
//
// for_each_index(device, n, kernel[, work]) runs kernel(i) for every i in [0, n): an OpenMP loop on
// the CPU (and the simulated accelerator), a grid-stride CUDA kernel on the GPU.
// for_each_row(device, rows, length, kernel) runs kernel(row, lanes) for every row, the row shared
// by a warp's lanes on the GPU and played by one thread on the CPU (row_lanes.h).
// reduce_index(device, n, reducer) folds reducer.load(i) with reducer.combine, in fixed-size chunks
// combined in order, so a CPU result does not depend on the number of threads. The kernel and
// reducer types are COURSE_HD functors; the GPU launchers are templates defined in launch_cuda.cuh
// and explicitly instantiated at the end of each kernel family's .cu file. A build without CUDA
// compiles those lists against stubs that fail (launch_stubs.h), so this header has no #if, and a
// missing instantiation is a link error in either build, never a silent CPU fallback. During a
// graph capture (capture.h) for_each_index is recorded, not run, and reduce_index, whose result
// comes back to the host, refuses. The GPU's grid is plan_launch(n, work_per_index)
// (launch_plan.h); while a LaunchLog records, launches are logged instead of run.
#pragma once

#include <cstdint>
#include <typeinfo>
#include <vector>

#include "common/core/error.h"
#include "common/kernels/launch_plan.h"
#include "common/kernels/row_lanes.h"
#include "common/tensor/capture.h"
#include "common/tensor/device.h"
#include "common/tensor/host_waits.h"

namespace course {

template <class Kernel>
void cuda_for_each(int64_t n, const Kernel& kernel, int64_t work_per_index);

template <class Kernel>
void cuda_for_each_row(int64_t rows, const Kernel& kernel);

template <class Reducer>
typename Reducer::Acc cuda_reduce(int64_t n, const Reducer& reducer);

// Whether work on `device` runs on the CPU now (neither on a GPU nor planned for one by a
// LaunchLog): for kernels that split their work one way for the CPU and another for a GPU, with
// the same additions in the same order either way.
inline bool runs_on_host(Device device) {
  return device.runs_host_kernels() && LaunchLog::active() == nullptr;
}

// Elements per chunk of a CPU reduction (and the CPU's loop grain below which one thread runs).
inline constexpr int64_t kCpuChunk = 4096;

// kernel(i) for every i in [0, n) on the CPU's threads: for_each_index's CPU side, called
// directly for a kernel that only ever runs on the host (it has no GPU instantiation).
// `work_per_index` estimates the elements one kernel(i) touches (a row's length, a channel's
// size), so loops over a few heavy indices still run on every CPU thread.
template <class Kernel>
void for_each_host_index(int64_t n, const Kernel& kernel, int64_t work_per_index = 1) {
  if (n <= 0) return;
  run_host_work([n, kernel, work_per_index] {
#pragma omp parallel for schedule(static) if (n > 1 && n * work_per_index > kCpuChunk)
    for (int64_t i = 0; i < n; ++i) kernel(i);
  });
}

template <class Kernel>
void for_each_index(Device device, int64_t n, const Kernel& kernel, int64_t work_per_index = 1) {
  if (n <= 0) return;
  if (LaunchLog* log = LaunchLog::active()) {
    log->record(typeid(Kernel).name(), n, work_per_index);
    return;
  }
  if (device.runs_host_kernels()) {
    for_each_host_index(n, kernel, work_per_index);
    return;
  }
  check_capture_device(device);
  set_current_device(device);
  cuda_for_each(n, kernel, work_per_index);
}

// Rows of `row_length` elements each, reduced and written by a row kernel (row_lanes.h).
template <class Kernel>
void for_each_row(Device device, int64_t rows, int64_t row_length, const Kernel& kernel) {
  if (rows <= 0) return;
  if (LaunchLog* log = LaunchLog::active()) {
    log->record(typeid(Kernel).name(), rows, row_length, plan_row_launch(rows));
    return;
  }
  if (device.runs_host_kernels()) {
    run_host_work([rows, row_length, kernel] {
#pragma omp parallel for schedule(static) if (rows > 1 && rows * row_length > kCpuChunk)
      for (int64_t row = 0; row < rows; ++row) kernel(row, ops::HostRowLanes{});
    });
    return;
  }
  check_capture_device(device);
  set_current_device(device);
  cuda_for_each_row(rows, kernel);
}

template <class Reducer>
typename Reducer::Acc reduce_index(Device device, int64_t n, const Reducer& reducer) {
  using Acc = typename Reducer::Acc;
  check_not_capturing("a reduction whose result is read on the host");
  if (n <= 0) return reducer.identity();
  if (LaunchLog* log = LaunchLog::active()) {
    log->record(typeid(Reducer).name(), n, 1);
    return reducer.identity();
  }
  note_host_read(device);
  if (device.runs_host_kernels()) {
    const int64_t chunks = (n + kCpuChunk - 1) / kCpuChunk;
    std::vector<Acc> partial(chunks);
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int64_t c = 0; c < chunks; ++c) {
      Acc acc = reducer.identity();
      const int64_t end = c * kCpuChunk + kCpuChunk < n ? c * kCpuChunk + kCpuChunk : n;
      for (int64_t i = c * kCpuChunk; i < end; ++i) acc = reducer.combine(acc, reducer.load(i));
      partial[c] = acc;
    }
    Acc total = reducer.identity();
    for (const Acc& p : partial) total = reducer.combine(total, p);
    return total;
  }
  set_current_device(device);
  return cuda_reduce(n, reducer);
}

}  // namespace course
