// The GPU launchers of a build without CUDA: there each .cu file's list of explicit
// instantiations is compiled as C++ against these definitions (tools/cuda/cuda.bzl), so the
// launchers that launch.h calls exist, fail with one message if ever reached, and a kernel
// missing from its list is a link error here as in a CUDA build.
#pragma once

#include <cstdint>
#include <typeinfo>

#include "common/core/error.h"
#include "common/kernels/launch.h"

namespace course {

[[noreturn]] inline void fail_without_cuda(const char* kernel) {
  COURSE_FAIL("GPU kernel ", kernel, " launched in a build without CUDA");
}

template <class Kernel>
void cuda_for_each(int64_t, const Kernel&, int64_t) {
  fail_without_cuda(typeid(Kernel).name());
}

template <class Kernel>
void cuda_for_each_row(int64_t, const Kernel&) {
  fail_without_cuda(typeid(Kernel).name());
}

template <class Reducer>
typename Reducer::Acc cuda_reduce(int64_t, const Reducer&) {
  fail_without_cuda(typeid(Reducer).name());
}

}  // namespace course
