// oneDNN back end of the CPU convolution (f32), with primitives cached per shape.
//
// Activations are described in their own layout (nchw or nhwc), so they need no reorder;
// weights are left to oneDNN ("any"), which picks the blocked layout its fastest kernel for
// that activation layout wants, and are reordered from and to the plain oihw tensors around
// each call (with nhwc activations and plain weights oneDNN 2.6 falls back to a reference
// kernel some twenty times slower). The weight gradient of a strided 1x1 convolution (a
// ResNet's projection shortcut) is taken as that of a stride-1 1x1 convolution of the
// subsampled input: oneDNN 2.6's strided 1x1 weight-gradient kernel returns wrong values in some
// multi-threaded runs (//common/nn/tests:layers_test's strided pointwise case failed about one
// run in ten), and its plain-weights fallback is four times slower than this.
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <string>

#include "common/kernels/conv2d.h"
#include "common/tensor/capture.h"

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

memory::desc plain_weight_desc(const Tensor& w) {
  return {{w.size(0), w.size(1), w.size(2), w.size(3)},
          memory::data_type::f32,
          memory::format_tag::oihw};
}

memory wrap(const memory::desc& desc, const Tensor& t) {
  return memory(desc, cpu_engine(), t.data());
}

// The three passes of one convolution geometry.
struct ConvPrimitives {
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
};

ConvPrimitives make_primitives(const memory::desc& src, const memory::dims& weight_dims,
                               const memory::desc& dst, Conv2dShape conv) {
  const memory::desc weights(weight_dims, memory::data_type::f32, memory::format_tag::any);
  const memory::dims strides{conv.stride, conv.stride}, padding{conv.padding, conv.padding};
  const auto algorithm = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::primitive_desc forward_pd(
      {dnnl::prop_kind::forward_training, algorithm, src, weights, dst, strides, padding, padding},
      cpu_engine());
  const dnnl::convolution_backward_data::primitive_desc data_pd(
      {algorithm, src, weights, dst, strides, padding, padding}, cpu_engine(), forward_pd);
  const dnnl::convolution_backward_weights::primitive_desc weights_pd(
      {algorithm, src, weights, dst, strides, padding, padding}, cpu_engine(), forward_pd);
  return {forward_pd,
          data_pd,
          weights_pd,
          dnnl::convolution_forward(forward_pd),
          dnnl::convolution_backward_data(data_pd),
          dnnl::convolution_backward_weights(weights_pd)};
}

const ConvPrimitives& primitives(const Tensor& x, const Tensor& w_or_dw, const Tensor& y,
                                 Conv2dShape conv) {
  static std::mutex mutex;
  static std::map<std::string, ConvPrimitives> cache;
  std::string key;
  for (const Tensor* t : {&x, &w_or_dw, &y}) {
    for (int64_t d : t->shape()) key += std::to_string(d) + ",";
    key += "|";
  }
  key += std::to_string(conv.stride) + "," + std::to_string(conv.padding) +
         (is_channels_last(x) ? "nhwc" : "nchw");
  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) {
    const memory::dims weight_dims{w_or_dw.size(0), w_or_dw.size(1), w_or_dw.size(2),
                                   w_or_dw.size(3)};
    it = cache
             .emplace(key,
                      make_primitives(activation_desc(x), weight_dims, activation_desc(y), conv))
             .first;
  }
  return it->second;
}

// Runs the primitive now, or records it in the CPU graph being captured (primitives and
// memory objects are reference-counted handles, so the recording keeps them alive).
void run(const dnnl::primitive& primitive, const std::unordered_map<int, memory>& args) {
  run_host_work([primitive, args] {
    dnnl::stream stream(cpu_engine());
    primitive.execute(stream, args);
    stream.wait();
  });
}

// The weights in the layout `wanted`: the tensor itself, or a reordered copy.
memory weights_as(const memory::desc& wanted, const Tensor& w) {
  const memory plain = wrap(plain_weight_desc(w), w);
  if (wanted == plain.get_desc()) return plain;
  memory blocked(wanted, cpu_engine());
  run(dnnl::reorder(plain, blocked), {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, blocked}});
  return blocked;
}

}  // namespace

void onednn_conv2d_forward(const Tensor& x, const Tensor& w, Tensor& y, Conv2dShape conv) {
  const ConvPrimitives& p = primitives(x, w, y, conv);
  run(p.forward, {{DNNL_ARG_SRC, wrap(activation_desc(x), x)},
                  {DNNL_ARG_WEIGHTS, weights_as(p.forward_pd.weights_desc(), w)},
                  {DNNL_ARG_DST, wrap(activation_desc(y), y)}});
}

void onednn_conv2d_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, Conv2dShape conv) {
  const ConvPrimitives& p = primitives(dx, w, dy, conv);
  run(p.backward_data, {{DNNL_ARG_DIFF_DST, wrap(activation_desc(dy), dy)},
                        {DNNL_ARG_WEIGHTS, weights_as(p.data_pd.weights_desc(), w)},
                        {DNNL_ARG_DIFF_SRC, wrap(activation_desc(dx), dx)}});
}

namespace {

// x[:, :, ::s, ::s] of an (N, C, H, W) f32 activation on the CPU, in its layout.
Tensor subsampled(const Tensor& x, int64_t stride, const Shape& output_shape) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t ho = output_shape[2], wo = output_shape[3];
  Tensor out = Tensor::empty({n, c, ho, wo}, DType::kF32, x.device(), x.memory_format());
  const float* in = x.data_as<float>();
  float* sampled = out.data_as<float>();
  const bool channels_last = is_channels_last(x);
  // Host work: replayed, not run at capture, when a CPU graph records the step.
  run_host_work([=] {
#pragma omp parallel for collapse(2)
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t i = 0; i < ho; ++i) {
        for (int64_t j = 0; j < wo; ++j) {
          for (int64_t k = 0; k < c; ++k) {
            const int64_t from = channels_last ? ((b * h + i * stride) * w + j * stride) * c + k
                                               : ((b * c + k) * h + i * stride) * w + j * stride;
            const int64_t to =
                channels_last ? ((b * ho + i) * wo + j) * c + k : ((b * c + k) * ho + i) * wo + j;
            sampled[to] = in[from];
          }
        }
      }
    }
  });
  return out;
}

}  // namespace

void onednn_conv2d_backward_weights(const Tensor& dy, const Tensor& x, Tensor& dw,
                                    Conv2dShape conv) {
  if (dw.size(2) == 1 && dw.size(3) == 1 && conv.stride > 1 && conv.padding == 0) {
    const Tensor x_sampled = subsampled(x, conv.stride, dy.shape());
    onednn_conv2d_backward_weights(dy, x_sampled, dw, {.stride = 1, .padding = 0});
    return;
  }
  const ConvPrimitives& p = primitives(x, dw, dy, conv);
  const memory plain = wrap(plain_weight_desc(dw), dw);
  const memory::desc produced = p.weights_pd.diff_weights_desc();
  const memory out = produced == plain.get_desc() ? plain : memory(produced, cpu_engine());
  run(p.backward_weights, {{DNNL_ARG_SRC, wrap(activation_desc(x), x)},
                           {DNNL_ARG_DIFF_DST, wrap(activation_desc(dy), dy)},
                           {DNNL_ARG_DIFF_WEIGHTS, out}});
  if (out != plain) run(dnnl::reorder(out, plain), {{DNNL_ARG_FROM, out}, {DNNL_ARG_TO, plain}});
}

}  // namespace course::detail
