// The elementwise operations: the maps of elementwise_ops.h dispatched element by element on
// the CPU and in 16-byte packets on a GPU, and their GPU instantiations.
#include "common/kernels/elementwise.h"
#include "common/kernels/elementwise_ops.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/packet.h"
#include "common/kernels/type_lists.cuh"

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

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
  if (is_floating(x.dtype()) && is_floating(dtype) && !runs_on_host(x.device()) &&
      ops::packet_aligned(x.data()) && ops::packet_aligned(out.data())) {
    visit_floating(x.dtype(), "cast", [&]<class From>() {
      visit_floating(dtype, "cast", [&]<class To>() {
        const ops::CastPackets<To, From> packets{x.data_as<From>(), out.data_as<To>(), x.numel()};
        for_each_index(x.device(), packets.packets(), packets, packets.kSize);
      });
    });
    return out;
  }
  visit_dtype(x.dtype(), [&]<class From>() {
    visit_dtype(dtype, [&]<class To>() {
      for_each_index(x.device(), x.numel(),
                     ops::Cast<To, From>{x.data_as<From>(), out.data_as<To>()});
    });
  });
  return out;
}

namespace {

// out = map(a, b) over every element (a unary map's b is a): 16-byte packets on a GPU when every
// operand is aligned to them, else an element per index.
template <class Map>
void map_elements(const Tensor& a, const Tensor& b, Tensor& out, const Map& map, const char* op) {
  visit_floating(a.dtype(), op, [&]<class T>() {
    const Device device = a.device();
    const T* pa = a.data_as<T>();
    const T* pb = b.data_as<T>();
    T* pout = out.data_as<T>();
    if (!runs_on_host(device) && ops::packet_aligned(pa) && ops::packet_aligned(pb) &&
        ops::packet_aligned(pout)) {
      const ops::MapPackets<T, Map> packets{pa, pb, pout, a.numel(), map};
      for_each_index(device, packets.packets(), packets, packets.kSize);
      return;
    }
    for_each_index(device, a.numel(), ops::MapElements<T, Map>{pa, pb, pout, map});
  });
}

template <class Map>
Tensor mapped(const Tensor& a, const Tensor& b, const Map& map, const char* op) {
  check_same(a, b, op);
  Tensor out = like(a);
  map_elements(a, b, out, map, op);
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return mapped(a, b, ops::AddMap{}, "add"); }

Tensor mul(const Tensor& a, const Tensor& b) { return mapped(a, b, ops::MulMap{}, "mul"); }

void axpy_(float alpha, const Tensor& x, Tensor& y) {
  check_same(x, y, "axpy_");
  map_elements(x, y, y, ops::AxpyMap{alpha}, "axpy_");
}

void scale_(Tensor& x, float alpha) { map_elements(x, x, x, ops::ScaleMap{alpha}, "scale_"); }

Tensor relu_forward(const Tensor& x) { return mapped(x, x, ops::ReluMap{}, "relu_forward"); }

Tensor add_relu(const Tensor& a, const Tensor& b) {
  return mapped(a, b, ops::AddReluMap{}, "add_relu");
}

Tensor relu_backward(const Tensor& dy, const Tensor& x) {
  return mapped(dy, x, ops::ReluGradMap{}, "relu_backward");
}

namespace {

template <class F>
Tensor pointwise_forward(const Tensor& x, const char* op) {
  return mapped(x, x, ops::ActivationMap<F>{}, op);
}

template <class F>
Tensor pointwise_backward(const Tensor& dy, const Tensor& x, const char* op) {
  return mapped(dy, x, ops::ActivationGradMap<F>{}, op);
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

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define MAP(T, M)                                     \
  COURSE_INSTANTIATE_FOR_EACH(ops::MapElements<T, M>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::MapPackets<T, M>)
#define ACTIVATION(T, F)        \
  MAP(T, ops::ActivationMap<F>) \
  MAP(T, ops::ActivationGradMap<F>)
#define FLOAT_KERNELS(T)                             \
  MAP(T, ops::AddMap)                                \
  MAP(T, ops::MulMap)                                \
  MAP(T, ops::AxpyMap)                               \
  MAP(T, ops::ScaleMap)                              \
  MAP(T, ops::ReluMap)                               \
  MAP(T, ops::AddReluMap)                            \
  MAP(T, ops::ReluGradMap)                           \
  ACTIVATION(T, ops::GeluTanh)                       \
  ACTIVATION(T, ops::Silu)                           \
  ACTIVATION(T, ops::Sigmoid)                        \
  ACTIVATION(T, ops::Tanh)                           \
  COURSE_INSTANTIATE_FOR_EACH(ops::SwigluForward<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::SwigluBackward<T>)
COURSE_FLOAT_TYPES(FLOAT_KERNELS)

#define FILL(T) COURSE_INSTANTIATE_FOR_EACH(ops::Fill<T>)
COURSE_ALL_TYPES(FILL)

// clang-format off
#define CAST_TO(To, From) COURSE_INSTANTIATE_FOR_EACH(ops::Cast<To, From>)
#define CAST_FROM(From)                    \
  CAST_TO(float, From)                     \
  CAST_TO(::course::Half, From)            \
  CAST_TO(::course::BFloat16, From)        \
  CAST_TO(int32_t, From)                   \
  CAST_TO(int64_t, From)                   \
  CAST_TO(uint8_t, From)                   \
  CAST_TO(int8_t, From)
COURSE_ALL_TYPES(CAST_FROM)
// clang-format on

#define CAST_PACKETS_TO(To, From) COURSE_INSTANTIATE_FOR_EACH(ops::CastPackets<To, From>)
#define CAST_PACKETS_FROM(From)         \
  CAST_PACKETS_TO(float, From)          \
  CAST_PACKETS_TO(::course::Half, From) \
  CAST_PACKETS_TO(::course::BFloat16, From)
COURSE_FLOAT_TYPES(CAST_PACKETS_FROM)

}  // namespace course
