// The thread-local autocast state.
#include "common/nn/autocast.h"

#include "common/kernels/elementwise.h"

namespace course::nn {

namespace {

thread_local bool autocast_enabled = false;
thread_local DType autocast_dtype = DType::kBF16;

}  // namespace

Autocast::Autocast(DType dtype, bool enabled)
    : previous_enabled_(autocast_enabled), previous_dtype_(autocast_dtype) {
  COURSE_CHECK(!enabled || dtype == DType::kF16 || dtype == DType::kBF16,
               "autocast computes in f16 or bf16, not ", dtype_name(dtype));
  autocast_enabled = enabled;
  autocast_dtype = dtype;
}

Autocast::~Autocast() {
  autocast_enabled = previous_enabled_;
  autocast_dtype = previous_dtype_;
}

DType matmul_dtype(const Tensor& x) { return autocast_enabled ? autocast_dtype : x.dtype(); }

Tensor as_dtype(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : cast(t, dtype); }

}  // namespace course::nn
