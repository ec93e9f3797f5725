// Per-channel operations of convolutional blocks, for either memory format: the
// squeeze-excitation's scaling of every (n, c) plane by its own factor (Hu et al. 2018), a
// per-channel bias, and the per-plane sums of a product that their gradients are. The bodies
// (one for the CPU and the GPU), their dispatch and their GPU instantiations.
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/channel_scale.h"
#include "common/kernels/index4.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/linear.h"
#include "common/kernels/type_lists.cuh"

namespace course::ops {

struct PlaneGeometry {
  int64_t c, h, w;
  Strides4 strides;
  // The address of element i of the (n, c, h, w) logical order.
  COURSE_HD int64_t at(int64_t i) const {
    const int64_t iw = i % w, ih = i / w % h, ch = i / (w * h) % c, n = i / (w * h * c);
    return strides.at(n, ch, ih, iw);
  }
};

// y = x scale[n, c], scale (N, C) f32.
template <class T>
struct ChannelScale {
  const T* x;
  const float* scale;
  T* y;
  PlaneGeometry g;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t at = g.at(i);
    y[at] = T(static_cast<float>(x[at]) * scale[i / (g.h * g.w)]);
  }
};

// y += bias[c], bias (C,) f32.
template <class T>
struct ChannelBias {
  T* y;
  const float* bias;
  PlaneGeometry g;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t at = g.at(i);
    y[at] = T(static_cast<float>(y[at]) + bias[i / (g.h * g.w) % g.c]);
  }
};

// Per (n, c) plane: out[n, c] = sum over (h, w) of a b, or of a alone when b is null.
template <class T>
struct PlaneDot {
  const T* a;
  const T* b;
  float* out;
  PlaneGeometry g;
  COURSE_HD void operator()(int64_t nc) const {
    const int64_t n = nc / g.c, ch = nc % g.c;
    float total = 0.0f;
    for (int64_t ih = 0; ih < g.h; ++ih) {
      for (int64_t iw = 0; iw < g.w; ++iw) {
        const int64_t at = g.strides.at(n, ch, ih, iw);
        total += static_cast<float>(a[at]) * (b ? static_cast<float>(b[at]) : 1.0f);
      }
    }
    out[nc] = total;
  }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

ops::PlaneGeometry geometry(const Tensor& x, const char* op) {
  const Dims4 d = dims4(x, op);
  COURSE_CHECK(is_floating(x.dtype()), op, " needs a floating tensor, got ", x.str());
  return {d.c, d.h, d.w, d.strides};
}

void check_f32(const Tensor& t, const Shape& shape, const Tensor& like, const char* what) {
  COURSE_CHECK(t.dtype() == DType::kF32 && t.shape() == shape && t.device() == like.device() &&
                   t.memory_format() == MemoryFormat::kContiguous,
               what, " must be f32 ", shape_str(shape), " on ", like.device().str(), ", got ",
               t.str());
}

void check_like(const Tensor& dy, const Tensor& x, const char* op) {
  COURSE_CHECK(dy.shape() == x.shape() && dy.dtype() == x.dtype() &&
                   dy.memory_format() == x.memory_format() && dy.device() == x.device(),
               op, ": dy ", dy.str(), " for input ", x.str());
}

// out (N, C) f32 = the sum over each plane of a b (of a alone when b is null).
void plane_dot(const Tensor& a, const Tensor* b, Tensor& out, const ops::PlaneGeometry& g) {
  visit_floating(a.dtype(), "plane sums", [&]<class T>() {
    for_each_index(
        a.device(), out.numel(),
        ops::PlaneDot<T>{a.data_as<T>(), b ? b->data_as<T>() : nullptr, out.data_as<float>(), g},
        g.h * g.w);
  });
}

}  // namespace

Tensor channel_scale_forward(const Tensor& x, const Tensor& scale) {
  const ops::PlaneGeometry g = geometry(x, "channel scaling");
  check_f32(scale, {x.size(0), g.c}, x, "the channel scale");
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device(), x.memory_format());
  visit_floating(x.dtype(), "channel_scale_forward", [&]<class T>() {
    for_each_index(x.device(), x.numel(),
                   ops::ChannelScale<T>{x.data_as<T>(), scale.data_as<float>(), y.data_as<T>(), g});
  });
  return y;
}

Tensor channel_scale_backward(const Tensor& dy, const Tensor& x, const Tensor& scale,
                              Tensor& scale_grad) {
  const ops::PlaneGeometry g = geometry(x, "channel scaling backward");
  check_like(dy, x, "channel scaling backward");
  check_f32(scale_grad, scale.shape(), x, "the channel scale's gradient");
  plane_dot(dy, &x, scale_grad, g);
  return channel_scale_forward(dy, scale);
}

void add_channel_bias_(Tensor& y, const Tensor& bias) {
  const ops::PlaneGeometry g = geometry(y, "channel bias");
  check_f32(bias, {g.c}, y, "the channel bias");
  visit_floating(y.dtype(), "add_channel_bias_", [&]<class T>() {
    for_each_index(y.device(), y.numel(),
                   ops::ChannelBias<T>{y.data_as<T>(), bias.data_as<float>(), g});
  });
}

void add_channel_bias_grad_(const Tensor& dy, Tensor& bias_grad) {
  const ops::PlaneGeometry g = geometry(dy, "channel bias backward");
  check_f32(bias_grad, {g.c}, dy, "the channel bias's gradient");
  Tensor plane_sums = Tensor::empty({dy.size(0), g.c}, DType::kF32, dy.device());
  plane_dot(dy, nullptr, plane_sums, g);
  add_column_sums_(plane_sums, bias_grad);
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define CHANNEL_SCALE(T)                            \
  COURSE_INSTANTIATE_FOR_EACH(ops::ChannelScale<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::ChannelBias<T>)  \
  COURSE_INSTANTIATE_FOR_EACH(ops::PlaneDot<T>)
COURSE_FLOAT_TYPES(CHANNEL_SCALE)

}  // namespace course
