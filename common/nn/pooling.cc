// Pooling layers.
#include "common/nn/pooling.h"

namespace course::nn {

MaxPool2d::MaxPool2d(int64_t kernel, int64_t stride, int64_t padding)
    : kernel_(kernel), stride_(stride), padding_(padding) {}

Tensor MaxPool2d::forward(const Tensor& x) {
  input_ = x;
  result_ = max_pool_forward(x, kernel_, stride_, padding_);
  return result_.y;
}

Tensor MaxPool2d::backward(const Tensor& dy) {
  COURSE_CHECK(input_.defined(), "MaxPool2d backward before forward");
  return max_pool_backward(dy, result_, input_, kernel_, stride_, padding_);
}

Tensor GlobalAvgPool2d::forward(const Tensor& x) {
  input_ = x;
  return global_avg_pool_forward(x);
}

Tensor GlobalAvgPool2d::backward(const Tensor& dy) {
  COURSE_CHECK(input_.defined(), "GlobalAvgPool2d backward before forward");
  return global_avg_pool_backward(dy, input_);
}

}  // namespace course::nn
