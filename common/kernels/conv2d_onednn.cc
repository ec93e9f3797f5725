// oneDNN back end of the CPU convolution (f32), with primitives cached per shape.
//
// Weights are left to oneDNN ("any"), which picks the blocked layout its fastest kernel wants,
// and are reordered from and to the plain oihw tensors around each call (with nhwc activations
// and plain weights oneDNN 2.6 falls back to a reference kernel some twenty times slower).
// Channels-last activations are used as they are; NCHW ones are left to oneDNN too and
// reordered around the call when it wants a blocked layout (nChw16c): with plain nchw
// activations oneDNN 2.6 runs im2col and a GEMM, about twice as slow as its direct kernels. The
// weight gradient of a strided 1x1 convolution (a ResNet's projection shortcut) is taken as that of
// a stride-1 1x1 convolution of the subsampled input: oneDNN 2.6's strided 1x1 weight-gradient
// kernel returns wrong values in some multi-threaded runs (common/nn/tests/layers_test.cc's strided
// pointwise case failed about one run in ten), and its plain-weights fallback is four times slower
// than this.
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

memory::desc activation_desc(const Tensor& t) {
  return {{t.size(0), t.size(1), t.size(2), t.size(3)},
          memory::data_type::f32,
          is_channels_last(t) ? memory::format_tag::nhwc : memory::format_tag::nchw};
}

// (O, C / G, K, K) weights as oneDNN sees them: oihw, or goihw (G, O / G, C / G, K, K) when
// grouped, the same memory.
memory::dims weight_dims(const Tensor& w, int64_t groups) {
  if (groups == 1) return {w.size(0), w.size(1), w.size(2), w.size(3)};
  return {groups, w.size(0) / groups, w.size(1), w.size(2), w.size(3)};
}

// Stored (O, C / G, K, K), or channels-last (O, K, K, C / G): ohwi, and gohwi when grouped (O's
// groups outermost, the same memory).
memory::desc plain_weight_desc(const Tensor& w, int64_t groups) {
  using tag = memory::format_tag;
  const bool nhwc = is_channels_last(w);
  return {weight_dims(w, groups), memory::data_type::f32,
          groups == 1 ? (nhwc ? tag::ohwi : tag::oihw) : (nhwc ? tag::gohwi : tag::goihw)};
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

// The layout the primitives are asked for: channels-last as it is, NCHW left to oneDNN.
memory::desc requested_activation_desc(const Tensor& t) {
  if (is_channels_last(t)) return activation_desc(t);
  return {{t.size(0), t.size(1), t.size(2), t.size(3)},
          memory::data_type::f32,
          memory::format_tag::any};
}

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
  key += std::to_string(conv.stride) + "," + std::to_string(conv.padding) + "," +
         std::to_string(conv.groups) + (is_channels_last(x) ? "nhwc" : "nchw");
  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) {
    it = cache
             .emplace(key, make_primitives(requested_activation_desc(x),
                                           weight_dims(w_or_dw, conv.groups),
                                           requested_activation_desc(y), conv))
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

// `plain` in the layout `wanted`: itself, or a reordered copy.
memory in_layout(const memory::desc& wanted, const memory& plain) {
  if (wanted == plain.get_desc()) return plain;
  memory reordered(wanted, cpu_engine());
  run(dnnl::reorder(plain, reordered), {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, reordered}});
  return reordered;
}

memory weights_as(const memory::desc& wanted, const Tensor& w, int64_t groups) {
  return in_layout(wanted, wrap(plain_weight_desc(w, groups), w));
}

memory activation_as(const memory::desc& wanted, const Tensor& t) {
  return in_layout(wanted, wrap(activation_desc(t), t));
}

// Where a primitive writes an output the tensor `plain` receives: the tensor itself when the
// layouts agree, else a buffer in the layout `produced`, copied back by write_back.
memory output_for(const memory::desc& produced, const memory& plain) {
  return produced == plain.get_desc() ? plain : memory(produced, cpu_engine());
}

void write_back(const memory& out, const memory& plain) {
  if (out != plain) run(dnnl::reorder(out, plain), {{DNNL_ARG_FROM, out}, {DNNL_ARG_TO, plain}});
}

}  // namespace

void onednn_conv2d_forward(const Tensor& x, const Tensor& w, Tensor& y, Conv2dShape conv) {
  const ConvPrimitives& p = primitives(x, w, y, conv);
  const memory plain_y = wrap(activation_desc(y), y);
  const memory out = output_for(p.forward_pd.dst_desc(), plain_y);
  run(p.forward, {{DNNL_ARG_SRC, activation_as(p.forward_pd.src_desc(), x)},
                  {DNNL_ARG_WEIGHTS, weights_as(p.forward_pd.weights_desc(), w, conv.groups)},
                  {DNNL_ARG_DST, out}});
  write_back(out, plain_y);
}

void onednn_conv2d_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, Conv2dShape conv) {
  const ConvPrimitives& p = primitives(dx, w, dy, conv);
  const memory plain_dx = wrap(activation_desc(dx), dx);
  const memory out = output_for(p.data_pd.diff_src_desc(), plain_dx);
  run(p.backward_data, {{DNNL_ARG_DIFF_DST, activation_as(p.data_pd.diff_dst_desc(), dy)},
                        {DNNL_ARG_WEIGHTS, weights_as(p.data_pd.weights_desc(), w, conv.groups)},
                        {DNNL_ARG_DIFF_SRC, out}});
  write_back(out, plain_dx);
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
    onednn_conv2d_backward_weights(dy, x_sampled, dw,
                                   {.stride = 1, .padding = 0, .groups = conv.groups});
    return;
  }
  const ConvPrimitives& p = primitives(x, dw, dy, conv);
  const memory plain = wrap(plain_weight_desc(dw, conv.groups), dw);
  const memory out = output_for(p.weights_pd.diff_weights_desc(), plain);
  run(p.backward_weights, {{DNNL_ARG_SRC, activation_as(p.weights_pd.src_desc(), x)},
                           {DNNL_ARG_DIFF_DST, activation_as(p.weights_pd.diff_dst_desc(), dy)},
                           {DNNL_ARG_DIFF_WEIGHTS, out}});
  write_back(out, plain);
}

}  // namespace course::detail
