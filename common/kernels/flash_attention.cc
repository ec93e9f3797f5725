// cuDNN's flash attention (flash_attention.h): the layout and the refusals, which every build
// has, and the graphs, which a CUDA build with the cuDNN frontend's headers has: one
// scaled-dot-product operation (forward with its statistics, or backward) per shape
// (cudnn_graph.h builds and runs it).
#include "common/kernels/flash_attention.h"

#include <atomic>
#include <cstdio>

#include "common/core/error.h"

#if COURSE_WITH_CUDA && COURSE_WITH_CUDNN_FRONTEND
#include "common/kernels/cudnn_graph.h"
#endif

namespace course {

namespace {
std::atomic<bool> flash_attention_on{true};
}  // namespace

void set_flash_attention(bool enabled) { flash_attention_on = enabled; }
bool flash_attention_enabled() { return flash_attention_on; }

PackedAttentionLayout packed_attention_layout(int64_t batch, int64_t seq, int64_t heads,
                                              int64_t head_dim) {
  const int64_t channels = heads * head_dim;
  PackedAttentionLayout layout;
  layout.dims = {batch, heads, seq, head_dim};
  // Element (b, t, part, h, d) of the packed projection, part 0, 1, 2 for Q, K, V.
  layout.qkv_strides = {seq * 3 * channels, head_dim, 3 * channels, 1};
  layout.k_offset = channels;
  layout.v_offset = 2 * channels;
  layout.out_strides = {seq * channels, head_dim, channels, 1};
  layout.lse_dims = {batch, heads, seq, 1};
  layout.lse_strides = {heads * seq, seq, 1, 1};
  return layout;
}

std::string flash_attention_refusal(const Tensor& qkv, int64_t heads, bool has_score_bias) {
  if (!flash_attention_enabled()) return "flash attention is switched off";
  if (!qkv.device().is_cuda()) return "flash attention runs on a GPU";
  if (qkv.dtype() != DType::kBF16 && qkv.dtype() != DType::kF16) {
    return detail::concat("cuDNN's flash attention takes bf16 or f16, not ",
                          dtype_name(qkv.dtype()));
  }
  if (has_score_bias) return "a score bias (relative positions) runs on the course's kernels";
  COURSE_CHECK(qkv.dim() == 3 && heads > 0 && qkv.size(2) % (3 * heads) == 0,
               "flash attention needs a (B, T, 3C) q|k|v tensor of ", heads, " heads, got ",
               qkv.str());
  const int64_t head_dim = qkv.size(2) / (3 * heads);
  if (head_dim % 8 != 0 || head_dim > 256) {
    return detail::concat(
        "cuDNN's flash attention needs a head size that is a multiple of 8 up "
        "to 256, not ",
        head_dim);
  }
  if (qkv.memory_format() != MemoryFormat::kContiguous) return "q|k|v is not contiguous";
  return "";
}

#if COURSE_WITH_CUDA && COURSE_WITH_CUDNN_FRONTEND
namespace {

namespace fe = cudnn_frontend;
using cudnn_graph::as_vector;
using cudnn_graph::TensorAttributes;

// The graph's tensors by uid, as the variant pack names them.
enum AttentionUid : int64_t { kQ = 1, kK, kV, kOut, kLse, kDOut, kDQ, kDK, kDV };

struct AttentionKey {
  int device;
  int64_t batch, seq, heads, head_dim;
  DType dtype;
  bool causal, backward;
  float scale;
  auto operator<=>(const AttentionKey&) const = default;

  std::string str() const {
    return detail::concat(backward ? "backward" : "forward", " of B ", batch, ", T ", seq, ", ",
                          heads, " heads of ", head_dim, ", ", dtype_name(dtype),
                          causal ? ", causal" : ", bidirectional");
  }
};

cudnn_graph::GraphPtr describe_attention(const AttentionKey& key) {
  const PackedAttentionLayout layout =
      packed_attention_layout(key.batch, key.seq, key.heads, key.head_dim);
  cudnn_graph::GraphPtr graph = cudnn_graph::new_graph(key.dtype);
  const auto tensor = [&](const char* name, AttentionUid uid,
                          const std::array<int64_t, 4>& strides) {
    return graph->tensor(fe::graph::Tensor_attributes()
                             .set_name(name)
                             .set_uid(uid)
                             .set_dim(as_vector(layout.dims))
                             .set_stride(as_vector(strides)));
  };
  const auto mark_output = [&](const TensorAttributes& t, AttentionUid uid,
                               const std::array<int64_t, 4>& strides) {
    t->set_output(true).set_uid(uid).set_dim(as_vector(layout.dims)).set_stride(as_vector(strides));
  };
  const TensorAttributes q = tensor("Q", kQ, layout.qkv_strides);
  const TensorAttributes k = tensor("K", kK, layout.qkv_strides);
  const TensorAttributes v = tensor("V", kV, layout.qkv_strides);
  if (!key.backward) {
    const auto options = fe::graph::SDPA_attributes()
                             .set_name("flash_attention")
                             .set_generate_stats(true)
                             .set_attn_scale(key.scale)
                             .set_causal_mask(key.causal);
    const auto [out, lse] = graph->sdpa(q, k, v, options);
    mark_output(out, kOut, layout.out_strides);
    lse->set_output(true)
        .set_uid(kLse)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim(as_vector(layout.lse_dims))
        .set_stride(as_vector(layout.lse_strides));
  } else {
    const TensorAttributes out = tensor("O", kOut, layout.out_strides);
    const TensorAttributes dout = tensor("dO", kDOut, layout.out_strides);
    const TensorAttributes lse = graph->tensor(fe::graph::Tensor_attributes()
                                                   .set_name("Stats")
                                                   .set_uid(kLse)
                                                   .set_data_type(fe::DataType_t::FLOAT)
                                                   .set_dim(as_vector(layout.lse_dims))
                                                   .set_stride(as_vector(layout.lse_strides)));
    const auto options = fe::graph::SDPA_backward_attributes()
                             .set_name("flash_attention_backward")
                             .set_attn_scale(key.scale)
                             .set_causal_mask(key.causal);
    const auto [dq, dk, dv] = graph->sdpa_backward(q, k, v, out, dout, lse, options);
    mark_output(dq, kDQ, layout.qkv_strides);
    mark_output(dk, kDK, layout.qkv_strides);
    mark_output(dv, kDV, layout.qkv_strides);
  }
  return graph;
}

bool run_plan(const AttentionKey& key, Device device, std::unordered_map<int64_t, void*> pointers) {
  return cudnn_graph::run(key, device, "flash attention", describe_attention, std::move(pointers));
}

AttentionKey key_of(const Tensor& qkv, int64_t heads, bool causal, float scale, bool backward) {
  return {qkv.device().index, qkv.size(0), qkv.size(1), heads, qkv.size(2) / (3 * heads),
          qkv.dtype(),        causal,      backward,    scale};
}

// Element offset `elements` into t's data.
void* at(const Tensor& t, int64_t elements) {
  return static_cast<char*>(t.data()) + elements * static_cast<int64_t>(dtype_size(t.dtype()));
}

}  // namespace

bool flash_attention_forward(const Tensor& qkv, int64_t heads, bool causal, float scale,
                             Tensor& out, Tensor& lse) {
  if (!flash_attention_refusal(qkv, heads, false).empty()) return false;
  const AttentionKey key = key_of(qkv, heads, causal, scale, false);
  const PackedAttentionLayout layout =
      packed_attention_layout(key.batch, key.seq, key.heads, key.head_dim);
  Tensor o = Tensor::empty({key.batch, key.seq, heads * key.head_dim}, qkv.dtype(), qkv.device());
  Tensor l = Tensor::empty({key.batch, heads, key.seq}, DType::kF32, qkv.device());
  if (!run_plan(key, qkv.device(),
                {{kQ, qkv.data()},
                 {kK, at(qkv, layout.k_offset)},
                 {kV, at(qkv, layout.v_offset)},
                 {kOut, o.data()},
                 {kLse, l.data()}})) {
    return false;
  }
  out = o;
  lse = l;
  return true;
}

bool flash_attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& dout,
                              const Tensor& lse, int64_t heads, bool causal, float scale,
                              Tensor& dqkv) {
  if (!flash_attention_refusal(qkv, heads, false).empty()) return false;
  const AttentionKey key = key_of(qkv, heads, causal, scale, true);
  COURSE_CHECK(dout.shape() == out.shape() && dout.dtype() == qkv.dtype() &&
                   dout.memory_format() == MemoryFormat::kContiguous &&
                   out.shape() == Shape({key.batch, key.seq, heads * key.head_dim}) &&
                   lse.shape() == Shape({key.batch, heads, key.seq}),
               "flash attention backward got dout ", dout.str(), ", out ", out.str(), ", lse ",
               lse.str(), " for q|k|v ", qkv.str());
  const PackedAttentionLayout layout =
      packed_attention_layout(key.batch, key.seq, key.heads, key.head_dim);
  Tensor grads = Tensor::empty(qkv.shape(), qkv.dtype(), qkv.device());
  if (!run_plan(key, qkv.device(),
                {{kQ, qkv.data()},
                 {kK, at(qkv, layout.k_offset)},
                 {kV, at(qkv, layout.v_offset)},
                 {kOut, out.data()},
                 {kDOut, dout.data()},
                 {kLse, lse.data()},
                 {kDQ, grads.data()},
                 {kDK, at(grads, layout.k_offset)},
                 {kDV, at(grads, layout.v_offset)}})) {
    return false;
  }
  dqkv = grads;
  return true;
}

#else

namespace {

// A GPU build without the frontend's headers says once why attention keeps its own kernels.
bool refuse_without_frontend(const Tensor& qkv, int64_t heads) {
  if (!flash_attention_refusal(qkv, heads, false).empty()) return false;
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    std::fprintf(stderr,
                 "note: built without the cuDNN frontend's headers, so attention on the GPU runs "
                 "the course's kernels (./setup.sh installs them; then build again)\n");
  }
  return false;
}

}  // namespace

bool flash_attention_forward(const Tensor& qkv, int64_t heads, bool, float, Tensor&, Tensor&) {
  return refuse_without_frontend(qkv, heads);
}

bool flash_attention_backward(const Tensor& qkv, const Tensor&, const Tensor&, const Tensor&,
                              int64_t heads, bool, float, Tensor&) {
  return refuse_without_frontend(qkv, heads);
}

#endif

}  // namespace course
