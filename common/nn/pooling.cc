// Pooling layers.
#include "common/nn/pooling.h"

#include "common/kernels/avg_pool2.h"
#include "common/nn/autocast.h"

namespace course::nn {

MaxPool2d::MaxPool2d(int64_t kernel, int64_t stride, int64_t padding)
    : kernel_(kernel), stride_(stride), padding_(padding) {}

Tensor MaxPool2d::run_forward(const Tensor& x, Context& ctx) {
  Saved saved{x, max_pool_forward(x, kernel_, stride_, padding_)};
  Tensor y = saved.result.y;
  ctx.save(std::move(saved));
  return y;
}

Tensor MaxPool2d::run_backward(const Tensor& dy, Context& ctx) {
  const Saved& saved = ctx.saved<Saved>("MaxPool2d");
  return max_pool_backward(dy, saved.result, saved.input, kernel_, stride_, padding_);
}

Tensor AvgPool2d::run_forward(const Tensor& x, Context& ctx) {
  ctx.save(x);
  return avg_pool2_forward(x);
}

Tensor AvgPool2d::run_backward(const Tensor& dy, Context& ctx) {
  const Tensor& x = ctx.saved<Tensor>("AvgPool2d");
  return avg_pool2_backward(as_dtype(dy, x.dtype()), x);
}

Tensor GlobalAvgPool2d::run_forward(const Tensor& x, Context& ctx) {
  ctx.save(x);
  return global_avg_pool_forward(x);
}

Tensor GlobalAvgPool2d::run_backward(const Tensor& dy, Context& ctx) {
  return global_avg_pool_backward(dy, ctx.saved<Tensor>("GlobalAvgPool2d"));
}

}  // namespace course::nn
