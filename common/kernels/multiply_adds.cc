// The thread's multiply-add count (multiply_adds.h).
#include "common/kernels/multiply_adds.h"

#include "common/core/error.h"

namespace course {

namespace {
thread_local MultiplyAddCount* counting = nullptr;
}  // namespace

MultiplyAddCount::MultiplyAddCount() {
  COURSE_CHECK(counting == nullptr, "multiply-adds are already being counted on this thread");
  counting = this;
}

MultiplyAddCount::~MultiplyAddCount() { counting = nullptr; }

void MultiplyAddCount::add(double multiply_adds) {
  if (counting != nullptr) counting->total_ += multiply_adds;
}

}  // namespace course
