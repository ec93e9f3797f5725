// Dispatch of the 2x2 average pooling to its single-source bodies (avg_pool2_ops.h).
#include "common/kernels/avg_pool2.h"

#include "common/kernels/avg_pool2_ops.h"
#include "common/kernels/launch.h"

namespace course {

namespace {

Shape pooled_shape(const Dims4& d) { return {d.n, d.c, d.h / 2, d.w / 2}; }

Dims4 checked_input(const Tensor& x, const char* op) {
  const Dims4 d = dims4(x, op);
  COURSE_CHECK(d.h >= 2 && d.w >= 2, op, " of a ", d.h, "x", d.w,
               " plane leaves no output (the image is too small for the network)");
  return d;
}

}  // namespace

Tensor avg_pool2_forward(const Tensor& x) {
  const Dims4 d = checked_input(x, "2x2 average pooling");
  Tensor y = Tensor::empty(pooled_shape(d), x.dtype(), x.device(), x.memory_format());
  const ops::AvgPool2Geometry g{d.c, d.h / 2, d.w / 2, d.strides, dims4(y, "pooled").strides};
  visit_floating(x.dtype(), "avg_pool2_forward", [&]<class T>() {
    for_each_index(x.device(), y.numel(),
                   ops::AvgPool2Forward<T>{x.data_as<T>(), y.data_as<T>(), g});
  });
  return y;
}

Tensor avg_pool2_backward(const Tensor& dy, const Tensor& x) {
  const Dims4 d = checked_input(x, "2x2 average pooling backward");
  COURSE_CHECK(dy.shape() == pooled_shape(d) && dy.dtype() == x.dtype() &&
                   dy.memory_format() == x.memory_format() && dy.device() == x.device(),
               "2x2 average pooling backward: dy ", dy.str(), " for input ", x.str());
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device(), x.memory_format());
  const ops::AvgPool2Geometry g{d.c, d.h / 2, d.w / 2, d.strides, dims4(dy, "dy").strides};
  visit_floating(x.dtype(), "avg_pool2_backward", [&]<class T>() {
    for_each_index(x.device(), x.numel(),
                   ops::AvgPool2Backward<T>{dy.data_as<T>(), dx.data_as<T>(), g, d.h, d.w});
  });
  return dx;
}

}  // namespace course
