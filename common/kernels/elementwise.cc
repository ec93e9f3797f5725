// Dispatch of the elementwise operations to the single-source kernels.
#include "common/kernels/elementwise.h"

#include "common/kernels/elementwise_ops.h"
#include "common/kernels/launch.h"

namespace course {

namespace {

Tensor like(const Tensor& t) {
  return Tensor::empty(t.shape(), t.dtype(), t.device(), t.memory_format());
}

}  // namespace

void fill_(Tensor& t, double value) {
  visit_dtype(t.dtype(), [&]<class T>() {
    for_each_index(t.device(), t.numel(), ops::Fill<T>{t.data_as<T>(), ops::convert<T>(value)});
  });
}

Tensor zeros(const Shape& shape, DType dtype, Device device, MemoryFormat format) {
  Tensor t = Tensor::empty(shape, dtype, device, format);
  fill_(t, 0.0);
  return t;
}

void copy_(Tensor& dst, const Tensor& src) {
  COURSE_CHECK(dst.shape() == src.shape() && dst.dtype() == src.dtype() &&
                   dst.memory_format() == src.memory_format(),
               "copy_: ", src.str(), " into ", dst.str());
  copy_bytes(dst.data(), dst.device(), src.data(), src.device(), src.nbytes());
}

Tensor cast(const Tensor& x, DType dtype) {
  Tensor out = Tensor::empty(x.shape(), dtype, x.device(), x.memory_format());
  visit_dtype(x.dtype(), [&]<class From>() {
    visit_dtype(dtype, [&]<class To>() {
      for_each_index(x.device(), x.numel(),
                     ops::Cast<To, From>{x.data_as<From>(), out.data_as<To>()});
    });
  });
  return out;
}

Tensor add(const Tensor& a, const Tensor& b) {
  check_same(a, b, "add");
  Tensor out = like(a);
  visit_floating(a.dtype(), "add", [&]<class T>() {
    for_each_index(a.device(), a.numel(),
                   ops::Add<T>{a.data_as<T>(), b.data_as<T>(), out.data_as<T>()});
  });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  check_same(a, b, "mul");
  Tensor out = like(a);
  visit_floating(a.dtype(), "mul", [&]<class T>() {
    for_each_index(a.device(), a.numel(),
                   ops::Mul<T>{a.data_as<T>(), b.data_as<T>(), out.data_as<T>()});
  });
  return out;
}

void axpy_(float alpha, const Tensor& x, Tensor& y) {
  check_same(x, y, "axpy_");
  visit_floating(x.dtype(), "axpy_", [&]<class T>() {
    for_each_index(x.device(), x.numel(), ops::Axpy<T>{alpha, x.data_as<T>(), y.data_as<T>()});
  });
}

void scale_(Tensor& x, float alpha) {
  visit_floating(x.dtype(), "scale_", [&]<class T>() {
    for_each_index(x.device(), x.numel(), ops::Scale<T>{alpha, x.data_as<T>()});
  });
}

Tensor relu_forward(const Tensor& x) {
  Tensor y = like(x);
  visit_floating(x.dtype(), "relu_forward", [&]<class T>() {
    for_each_index(x.device(), x.numel(), ops::ReluForward<T>{x.data_as<T>(), y.data_as<T>()});
  });
  return y;
}

Tensor add_relu(const Tensor& a, const Tensor& b) {
  check_same(a, b, "add_relu");
  Tensor y = like(a);
  visit_floating(a.dtype(), "add_relu", [&]<class T>() {
    for_each_index(a.device(), a.numel(),
                   ops::AddRelu<T>{a.data_as<T>(), b.data_as<T>(), y.data_as<T>()});
  });
  return y;
}

Tensor relu_backward(const Tensor& dy, const Tensor& x) {
  check_same(dy, x, "relu_backward");
  Tensor dx = like(x);
  visit_floating(x.dtype(), "relu_backward", [&]<class T>() {
    for_each_index(x.device(), x.numel(),
                   ops::ReluBackward<T>{dy.data_as<T>(), x.data_as<T>(), dx.data_as<T>()});
  });
  return dx;
}

namespace {

template <class F>
Tensor pointwise_forward(const Tensor& x, const char* op) {
  Tensor y = like(x);
  visit_floating(x.dtype(), op, [&]<class T>() {
    for_each_index(x.device(), x.numel(),
                   ops::PointwiseForward<T, F>{x.data_as<T>(), y.data_as<T>()});
  });
  return y;
}

template <class F>
Tensor pointwise_backward(const Tensor& dy, const Tensor& x, const char* op) {
  check_same(dy, x, op);
  Tensor dx = like(x);
  visit_floating(x.dtype(), op, [&]<class T>() {
    for_each_index(x.device(), x.numel(),
                   ops::PointwiseBackward<T, F>{dy.data_as<T>(), x.data_as<T>(), dx.data_as<T>()});
  });
  return dx;
}

}  // namespace

Tensor gelu_forward(const Tensor& x) { return pointwise_forward<ops::GeluTanh>(x, "gelu_forward"); }
Tensor gelu_backward(const Tensor& dy, const Tensor& x) {
  return pointwise_backward<ops::GeluTanh>(dy, x, "gelu_backward");
}
Tensor silu_forward(const Tensor& x) { return pointwise_forward<ops::Silu>(x, "silu_forward"); }
Tensor silu_backward(const Tensor& dy, const Tensor& x) {
  return pointwise_backward<ops::Silu>(dy, x, "silu_backward");
}
Tensor sigmoid_forward(const Tensor& x) {
  return pointwise_forward<ops::Sigmoid>(x, "sigmoid_forward");
}
Tensor sigmoid_backward(const Tensor& dy, const Tensor& x) {
  return pointwise_backward<ops::Sigmoid>(dy, x, "sigmoid_backward");
}
Tensor tanh_forward(const Tensor& x) { return pointwise_forward<ops::Tanh>(x, "tanh_forward"); }
Tensor tanh_backward(const Tensor& dy, const Tensor& x) {
  return pointwise_backward<ops::Tanh>(dy, x, "tanh_backward");
}

namespace {

// The width F of a packed (..., 2F) gate | up input.
int64_t gated_width(const Tensor& x) {
  COURSE_CHECK(
      x.dim() >= 1 && x.size(-1) % 2 == 0 && x.memory_format() == MemoryFormat::kContiguous,
      "SwiGLU needs a contiguous (..., 2F) gate | up input, got ", x.str());
  return x.size(-1) / 2;
}

Shape gated_shape(const Tensor& x) {
  Shape shape = x.shape();
  shape.back() /= 2;
  return shape;
}

}  // namespace

Tensor swiglu_forward(const Tensor& x) {
  const int64_t width = gated_width(x);
  Tensor y = Tensor::empty(gated_shape(x), x.dtype(), x.device());
  visit_floating(x.dtype(), "swiglu_forward", [&]<class T>() {
    for_each_index(x.device(), y.numel(),
                   ops::SwigluForward<T>{x.data_as<T>(), y.data_as<T>(), width});
  });
  return y;
}

Tensor swiglu_backward(const Tensor& dy, const Tensor& x) {
  const int64_t width = gated_width(x);
  COURSE_CHECK(dy.shape() == gated_shape(x) && dy.dtype() == x.dtype() && dy.device() == x.device(),
               "SwiGLU backward got dy ", dy.str(), " for an input ", x.str());
  Tensor dx = like(x);
  visit_floating(x.dtype(), "swiglu_backward", [&]<class T>() {
    for_each_index(x.device(), dy.numel(),
                   ops::SwigluBackward<T>{dy.data_as<T>(), x.data_as<T>(), dx.data_as<T>(), width});
  });
  return dx;
}

}  // namespace course
