// oneDNN back end of the CPU convolution (f32), with primitives cached per shape.
//
// Activations are described in their own layout (nchw or nhwc) and weights as oihw, so no
// reorder is needed around a call; oneDNN picks its fastest implementation for those layouts.
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <string>

#include "common/kernels/conv2d.h"

namespace course::detail {

namespace {

using dnnl::memory;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

bool is_channels_last(const Tensor& t) { return t.memory_format() == MemoryFormat::kChannelsLast; }

memory::desc activation_desc(const Tensor& t) {
  return {{t.size(0), t.size(1), t.size(2), t.size(3)},
          memory::data_type::f32,
          is_channels_last(t) ? memory::format_tag::nhwc : memory::format_tag::nchw};
}

memory::desc weight_desc(const Tensor& w) {
  return {{w.size(0), w.size(1), w.size(2), w.size(3)},
          memory::data_type::f32,
          memory::format_tag::oihw};
}

memory wrap(const memory::desc& desc, const Tensor& t) {
  return memory(desc, cpu_engine(), t.data());
}

// The three primitives of one convolution geometry.
struct ConvPrimitives {
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
};

const ConvPrimitives& primitives(const memory::desc& src, const memory::desc& weights,
                                 const memory::desc& dst, Conv2dShape conv, bool channels_last) {
  static std::mutex mutex;
  static std::map<std::string, ConvPrimitives> cache;
  const auto& s = src.dims();
  const auto& w = weights.dims();
  const std::string key = std::to_string(s[0]) + "," + std::to_string(s[1]) + "," +
                          std::to_string(s[2]) + "," + std::to_string(s[3]) + "|" +
                          std::to_string(w[0]) + "," + std::to_string(w[2]) + "|" +
                          std::to_string(conv.stride) + "," + std::to_string(conv.padding) +
                          (channels_last ? "|nhwc" : "|nchw");
  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const memory::dims strides{conv.stride, conv.stride}, padding{conv.padding, conv.padding};
  const auto algorithm = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::primitive_desc forward_pd(
      {dnnl::prop_kind::forward_training, algorithm, src, weights, dst, strides, padding, padding},
      cpu_engine());
  const dnnl::convolution_backward_data::primitive_desc data_pd(
      {algorithm, src, weights, dst, strides, padding, padding}, cpu_engine(), forward_pd);
  const dnnl::convolution_backward_weights::primitive_desc weights_pd(
      {algorithm, src, weights, dst, strides, padding, padding}, cpu_engine(), forward_pd);
  return cache
      .emplace(key, ConvPrimitives{dnnl::convolution_forward(forward_pd),
                                   dnnl::convolution_backward_data(data_pd),
                                   dnnl::convolution_backward_weights(weights_pd)})
      .first->second;
}

void run(const dnnl::primitive& primitive, const std::unordered_map<int, memory>& args) {
  dnnl::stream stream(cpu_engine());
  primitive.execute(stream, args);
  stream.wait();
}

}  // namespace

void onednn_conv2d_forward(const Tensor& x, const Tensor& w, Tensor& y, Conv2dShape conv) {
  const auto src = activation_desc(x), weights = weight_desc(w), dst = activation_desc(y);
  run(primitives(src, weights, dst, conv, is_channels_last(x)).forward,
      {{DNNL_ARG_SRC, wrap(src, x)},
       {DNNL_ARG_WEIGHTS, wrap(weights, w)},
       {DNNL_ARG_DST, wrap(dst, y)}});
}

void onednn_conv2d_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, Conv2dShape conv) {
  const auto src = activation_desc(dx), weights = weight_desc(w), dst = activation_desc(dy);
  run(primitives(src, weights, dst, conv, is_channels_last(dx)).backward_data,
      {{DNNL_ARG_DIFF_DST, wrap(dst, dy)},
       {DNNL_ARG_WEIGHTS, wrap(weights, w)},
       {DNNL_ARG_DIFF_SRC, wrap(src, dx)}});
}

void onednn_conv2d_backward_weights(const Tensor& dy, const Tensor& x, Tensor& dw,
                                    Conv2dShape conv) {
  const auto src = activation_desc(x), weights = weight_desc(dw), dst = activation_desc(dy);
  run(primitives(src, weights, dst, conv, is_channels_last(x)).backward_weights,
      {{DNNL_ARG_SRC, wrap(src, x)},
       {DNNL_ARG_DIFF_DST, wrap(dst, dy)},
       {DNNL_ARG_DIFF_WEIGHTS, wrap(weights, dw)}});
}

}  // namespace course::detail
