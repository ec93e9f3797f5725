// Dispatch of the per-channel operations to their single-source bodies (channel_scale_ops.h).
#include "common/kernels/channel_scale.h"

#include "common/kernels/channel_scale_ops.h"
#include "common/kernels/launch.h"
#include "common/kernels/linear.h"

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
