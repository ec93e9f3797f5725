// The 2x2, stride-2 average pooling that downsamples CoAtNet's stages (Dai et al. 2021: the
// shortcut of a downsampling block, and the attention's input), for either memory format: its
// bodies (one for the CPU and the GPU), their dispatch and their GPU instantiations. An odd last
// row or column is dropped (floor), as PyTorch's AvgPool2d(2) does. The backward gathers: each
// input element reads its window's gradient.
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/avg_pool2.h"
#include "common/kernels/index4.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

namespace course::ops {

struct AvgPool2Geometry {
  int64_t c, oh, ow;  // output channels and plane; the input plane is at least 2 oh x 2 ow
  Strides4 in, out;
};

// Output element i, in (n, c, oh, ow) logical order: the mean of its 2x2 window.
template <class T>
struct AvgPool2Forward {
  const T* x;
  T* y;
  AvgPool2Geometry g;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t ow = i % g.ow, oh = i / g.ow % g.oh, ch = i / (g.ow * g.oh) % g.c;
    const int64_t n = i / (g.ow * g.oh * g.c);
    float total = 0.0f;
    for (int64_t dh = 0; dh < 2; ++dh) {
      for (int64_t dw = 0; dw < 2; ++dw) {
        total += static_cast<float>(x[g.in.at(n, ch, 2 * oh + dh, 2 * ow + dw)]);
      }
    }
    y[g.out.at(n, ch, oh, ow)] = T(0.25f * total);
  }
};

// Input element i, in (n, c, h, w) logical order of the (h, w) input plane: a quarter of its
// window's gradient, 0 in a dropped last row or column.
template <class T>
struct AvgPool2Backward {
  const T* dy;
  T* dx;
  AvgPool2Geometry g;
  int64_t h, w;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t iw = i % w, ih = i / w % h, ch = i / (w * h) % g.c, n = i / (w * h * g.c);
    const int64_t oh = ih / 2, ow = iw / 2;
    const bool pooled = oh < g.oh && ow < g.ow;
    dx[g.in.at(n, ch, ih, iw)] =
        T(pooled ? 0.25f * static_cast<float>(dy[g.out.at(n, ch, oh, ow)]) : 0.0f);
  }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

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

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define AVG_POOL2(T)                                   \
  COURSE_INSTANTIATE_FOR_EACH(ops::AvgPool2Forward<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::AvgPool2Backward<T>)
COURSE_FLOAT_TYPES(AVG_POOL2)

}  // namespace course
