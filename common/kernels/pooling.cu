// Pooling: its single-source kernels (pooling_ops.h) dispatched, and their GPU instantiations.
#include <initializer_list>

#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/pooling.h"
#include "common/kernels/pooling_ops.h"
#include "common/kernels/pooling_packets_ops.h"
#include "common/kernels/type_lists.cuh"

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

ops::PoolGeometry pool_geometry(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding) {
  const Dims4 d = dims4(x, "max pooling");
  COURSE_CHECK(kernel > 0 && stride > 0 && padding >= 0 && padding < kernel,
               "max pooling needs kernel > padding >= 0 and stride > 0, got kernel ", kernel,
               ", stride ", stride, ", padding ", padding);
  const int64_t oh = (d.h + 2 * padding - kernel) / stride + 1;
  const int64_t ow = (d.w + 2 * padding - kernel) / stride + 1;
  COURSE_CHECK(d.h + 2 * padding >= kernel && d.w + 2 * padding >= kernel,
               "max pooling with kernel ", kernel, " of a ", d.h, "x", d.w,
               " input leaves no output (the image is too small for the network)");
  return {d.n, d.c, d.h, d.w, oh, ow, kernel, stride, padding, d.strides, {}};
}

// Whether a channels-last pooling on `device` runs by packets of channels (MaxPoolForwardPackets):
// on a GPU, with the channels a multiple of a packet's elements and every operand aligned.
template <class T>
bool by_packets(Device device, const ops::PoolGeometry& g,
                std::initializer_list<const void*> data) {
  if (runs_on_host(device) || g.c % ops::Packet<T>::kSize != 0) return false;
  for (const void* p : data) {
    if (!ops::packet_aligned(p)) return false;
  }
  return true;
}

}  // namespace

MaxPoolResult max_pool_forward(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding) {
  ops::PoolGeometry g = pool_geometry(x, kernel, stride, padding);
  MaxPoolResult out{
      Tensor::empty({g.n, g.c, g.oh, g.ow}, x.dtype(), x.device(), x.memory_format()),
      Tensor::empty({g.n, g.c, g.oh, g.ow}, DType::kI32, x.device(), x.memory_format())};
  g.out = dims4(out.y, "max pooling").strides;
  const auto run = [&]<class T>() {
    const bool channels_last = x.memory_format() == MemoryFormat::kChannelsLast;
    if (channels_last &&
        by_packets<T>(x.device(), g, {x.data(), out.y.data(), out.argmax.data()})) {
      const ops::MaxPoolForwardPackets<T> packets{x.data_as<T>(), out.y.data_as<T>(),
                                                  out.argmax.data_as<int32_t>(), g};
      for_each_index(x.device(), packets.indices(), packets, packets.kSize * kernel * kernel);
    } else if (channels_last) {
      for_each_index(x.device(), g.n * g.oh * g.ow,
                     ops::MaxPoolForwardChannelsLast<T>{x.data_as<T>(), out.y.data_as<T>(),
                                                        out.argmax.data_as<int32_t>(), g},
                     g.c * kernel * kernel);
    } else {
      const int64_t rows = runs_on_host(x.device()) ? g.oh : 1;
      for_each_index(x.device(), g.n * g.c * (g.oh / rows),
                     ops::MaxPoolForward<T>{x.data_as<T>(), out.y.data_as<T>(),
                                            out.argmax.data_as<int32_t>(), g, rows},
                     rows * g.ow * kernel * kernel);
    }
  };
  if (x.dtype() == DType::kI8) {
    run.operator()<int8_t>();  // quantized activations (int8 inference): max commutes with scaling
  } else {
    visit_floating(x.dtype(), "max pooling", run);
  }
  return out;
}

Tensor max_pool_backward(const Tensor& dy, const MaxPoolResult& forward, const Tensor& x,
                         int64_t kernel, int64_t stride, int64_t padding) {
  ops::PoolGeometry g = pool_geometry(x, kernel, stride, padding);
  check_same(dy, forward.y, "max pooling backward");
  g.out = dims4(dy, "max pooling backward").strides;
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device(), x.memory_format());
  g.in = dims4(dx, "max pooling backward").strides;  // dense: the kernels write dx
  visit_floating(x.dtype(), "max pooling backward", [&]<class T>() {
    const T* dys = dy.data_as<T>();
    const int32_t* argmax = forward.argmax.data_as<int32_t>();
    const bool channels_last = x.memory_format() == MemoryFormat::kChannelsLast;
    if (channels_last && by_packets<T>(x.device(), g, {dys, argmax, dx.data()})) {
      const ops::MaxPoolBackwardPackets<T> packets{dys, argmax, dx.data_as<T>(), g};
      for_each_index(x.device(), packets.indices(), packets, packets.kSize * kernel * kernel);
    } else if (channels_last) {
      for_each_index(x.device(), g.n * g.h * g.w,
                     ops::MaxPoolBackwardChannelsLast<T>{dys, argmax, dx.data_as<T>(), g},
                     g.c * kernel * kernel);
    } else {
      const int64_t rows = runs_on_host(x.device()) ? g.h : 1;
      for_each_index(x.device(), g.n * g.c * (g.h / rows),
                     ops::MaxPoolBackward<T>{dys, argmax, dx.data_as<T>(), g, rows},
                     rows * g.w * kernel * kernel);
    }
  });
  return dx;
}

Tensor global_avg_pool_forward(const Tensor& x) {
  const Dims4 d = dims4(x, "global average pooling");
  Tensor y = Tensor::empty({d.n, d.c}, x.dtype(), x.device());
  visit_floating(x.dtype(), "global average pooling", [&]<class T>() {
    for_each_index(
        x.device(), d.n * d.c,
        ops::GlobalAvgPoolForward<T>{x.data_as<T>(), y.data_as<T>(), d.c, d.h, d.w, d.strides},
        d.h * d.w);
  });
  return y;
}

Tensor global_avg_pool_backward(const Tensor& dy, const Tensor& x) {
  const Dims4 d = dims4(x, "global average pooling backward");
  COURSE_CHECK(dy.shape() == (Shape{d.n, d.c}) && dy.dtype() == x.dtype(),
               "global average pooling backward: dy ", dy.str(), " for input ", x.str());
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device(), x.memory_format());
  visit_floating(x.dtype(), "global average pooling backward", [&]<class T>() {
    for_each_index(
        x.device(), d.n * d.c,
        ops::GlobalAvgPoolBackward<T>{dy.data_as<T>(), dx.data_as<T>(), d.c, d.h, d.w, d.strides},
        d.h * d.w);
  });
  return dx;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define POOLING(T)                                                 \
  COURSE_INSTANTIATE_FOR_EACH(ops::MaxPoolForward<T>)              \
  COURSE_INSTANTIATE_FOR_EACH(ops::MaxPoolForwardChannelsLast<T>)  \
  COURSE_INSTANTIATE_FOR_EACH(ops::MaxPoolForwardPackets<T>)       \
  COURSE_INSTANTIATE_FOR_EACH(ops::MaxPoolBackward<T>)             \
  COURSE_INSTANTIATE_FOR_EACH(ops::MaxPoolBackwardChannelsLast<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::MaxPoolBackwardPackets<T>)      \
  COURSE_INSTANTIATE_FOR_EACH(ops::GlobalAvgPoolForward<T>)        \
  COURSE_INSTANTIATE_FOR_EACH(ops::GlobalAvgPoolBackward<T>)
COURSE_FLOAT_TYPES(POOLING)
COURSE_INSTANTIATE_FOR_EACH(ops::MaxPoolForward<int8_t>)
COURSE_INSTANTIATE_FOR_EACH(ops::MaxPoolForwardChannelsLast<int8_t>)
COURSE_INSTANTIATE_FOR_EACH(ops::MaxPoolForwardPackets<int8_t>)

}  // namespace course
