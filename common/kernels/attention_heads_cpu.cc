// Attention on the CPU, each (T, D) matrix of heads on one thread, its queries in bands of
// kBandRows rows.
//
// The batched path (attention_heads.cc) writes the whole (N, T, T) score tensor and reads it
// back in each pass: at gpt-mini's 96 heads of 256 positions that is 24 MiB, through memory
// some five times a layer. Here one thread takes one matrix at a time, and a band's scores
// (kBandRows x T, 64 KiB) stay in its core's cache from their product to the one that consumes
// them. Under a causal mask a band of queries sees only the keys up to its last row, so its
// products stop there: at T = 256, 5/8 of the full products' work. Every row computes what the
// row kernels of attention_ops.h compute, with the same exp_poly and the same order of sums.
//
// The products take each matrix's rows with a leading dimension, so the loop reads the heads
// where they are: in the (N, T, D) heads' layout, or straight from the packed (B, T, 3C) q|k|v
// of attention.h, whose permutes to and from the heads' layout it then saves.
#include "common/kernels/attention_heads_cpu.h"

#include <dnnl.h>
#include <dnnl_debug.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/kernels/exp_poly.h"
#include "common/kernels/row_lanes.h"
#include "common/tensor/capture.h"

namespace course::detail {

namespace {

constexpr int64_t kBandRows = 64;

// One matrix's (T, D) heads and the bands of its queries.
struct Heads {
  int64_t seq, dim;
  bool causal;
  // The keys that queries [first, first + rows) see between them.
  int64_t band_keys(int64_t first, int64_t rows) const { return causal ? first + rows : seq; }
  int64_t keys_seen(int64_t query) const { return causal ? query + 1 : seq; }
  float scale() const { return attention_scale(dim); }
};

// Where the (T, D) matrices of one operand lie: matrix m, head m % heads of sample m / heads,
// starts `sample_stride` elements per sample and `head_stride` per head from the operand's
// start, its rows `row_stride` apart.
struct MatrixLayout {
  int64_t heads, sample_stride, head_stride, row_stride;
  int64_t start(int64_t m) const { return m / heads * sample_stride + m % heads * head_stride; }
};

// A packed (B, T, `width`) tensor whose row t holds head j's D values at j D (+ an operand's
// offset, which the caller adds to the start). (N, T, D) contiguous heads are packed_layout(h, 1,
// D): N samples of one head.
MatrixLayout packed_layout(const Heads& h, int64_t heads, int64_t width) {
  return {heads, h.seq * width, h.dim, width};
}

// The forward's operands: q, k, v in one layout, out in another; lse (N, T) contiguous.
struct ForwardOperands {
  const float *q, *k, *v;
  MatrixLayout in;
  float* out;
  MatrixLayout out_layout;
  float* lse;
};

// The backward's: q, k, v and their gradients in one layout, dout in another.
struct BackwardOperands {
  const float *q, *k, *v, *dout, *lse, *row_dots;  // row_dots (N, T) or nullptr
  MatrixLayout in, dout_layout;
  float *dq, *dk, *dv;
  bool accumulate;
};

// Row-major c (m, n) = alpha op(a) op(b) + beta c, on the calling thread (oneDNN runs
// single-threaded inside a parallel region); a failure's status, or dnnl_success.
int product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
            int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Runs band(matrix, scratch, status) for every matrix, the matrices shared out over the
// threads, each with its own scratch of `scratch_floats`; throws if a product failed.
template <class Band>
void each_matrix(int64_t matrices, int64_t scratch_floats, const Band& band) {
  int status = dnnl_success;
#pragma omp parallel reduction(max : status)
  {
    std::vector<float> scratch(scratch_floats);
#pragma omp for schedule(dynamic)
    for (int64_t m = 0; m < matrices; ++m) band(m, scratch.data(), status);
  }
  COURSE_CHECK(status == dnnl_success, "oneDNN sgemm in the CPU's attention failed: ",
               dnnl_status2str(static_cast<dnnl_status_t>(status)));
}

// A band's score rows are `padded(keys)` apart: whole groups of the row kernels' lanes.
int64_t padded(int64_t keys) {
  return (keys + ops::kRowLanes - 1) / ops::kRowLanes * ops::kRowLanes;
}

// softmax_row's probabilities and log-sum-exp of row[0, seen), in place, with row[seen, keys)
// set to 0 for the product that follows (the row has room for padded(keys)). The same sums in
// the same order, each exponential taken once and kept, where softmax_row takes it twice. The
// lanes fold the row up to the next whole group of lanes, padded(seen), whose padding holds
// -inf first and then its exponential, exactly 0: they skip their tail, to the same results
// (max(x, -inf) and x + 0 are x). At T = 64 the tail was most of a causal row's work.
float softmax_in_place(float* row, int64_t seen, int64_t keys) {
  const ops::HostRowLanes lanes;
  const int64_t folded = padded(seen);
  std::fill(row + seen, row + folded, -INFINITY);
  const float top = lanes.max(folded, [row](int64_t j) { return row[j]; });
  for (int64_t j = 0; j < folded; ++j) row[j] = ops::exp_poly(row[j] - top);
  const float total = lanes.sum(folded, [row](int64_t j) { return row[j]; });
  for (int64_t j = 0; j < seen; ++j) row[j] /= total;
  for (int64_t j = folded; j < keys; ++j) row[j] = 0.0f;  // none where folded passes keys
  return top + std::log(total);
}

void forward_bands(const Heads& h, int64_t matrices, const ForwardOperands& o) {
  const int64_t ld = o.in.row_stride, out_ld = o.out_layout.row_stride;
  each_matrix(matrices, kBandRows * padded(h.seq), [&](int64_t m, float* scores, int& status) {
    const int64_t at = o.in.start(m);
    const float *qm = o.q + at, *km = o.k + at, *vm = o.v + at;
    float* om = o.out + o.out_layout.start(m);
    for (int64_t first = 0; first < h.seq; first += kBandRows) {
      const int64_t rows = std::min(kBandRows, h.seq - first);
      const int64_t keys = h.band_keys(first, rows), width = padded(keys);
      status = std::max(status, product(false, true, rows, keys, h.dim, h.scale(), qm + first * ld,
                                        ld, km, ld, 0.0f, scores, width));
      for (int64_t i = 0; i < rows; ++i) {
        o.lse[m * h.seq + first + i] =
            softmax_in_place(scores + i * width, h.keys_seen(first + i), keys);
      }
      status = std::max(status, product(false, false, rows, h.dim, keys, 1.0f, scores, width, vm,
                                        ld, 0.0f, om + first * out_ld, out_ld));
    }
  });
}

void backward_bands(const Heads& h, int64_t matrices, const BackwardOperands& o) {
  const int64_t ld = o.in.row_stride, dout_ld = o.dout_layout.row_stride;
  const int64_t band_floats = kBandRows * padded(h.seq);
  // Scratch: a band's probabilities P, then its dP turned into dS in place.
  each_matrix(matrices, 2 * band_floats, [&](int64_t m, float* scratch, int& status) {
    const int64_t at = o.in.start(m);
    const float *qm = o.q + at, *km = o.k + at, *vm = o.v + at;
    const float* dom = o.dout + o.dout_layout.start(m);
    float *dqm = o.dq + at, *dkm = o.dk + at, *dvm = o.dv + at;
    if (!o.accumulate) {
      for (int64_t t = 0; t < h.seq; ++t) {
        std::fill_n(dkm + t * ld, h.dim, 0.0f);
        std::fill_n(dvm + t * ld, h.dim, 0.0f);
      }
    }
    for (int64_t first = 0; first < h.seq; first += kBandRows) {
      const int64_t rows = std::min(kBandRows, h.seq - first);
      const int64_t keys = h.band_keys(first, rows), width = padded(keys);
      float *probs = scratch, *dscores = scratch + band_floats;
      const float *q_band = qm + first * ld, *do_band = dom + first * dout_ld;
      status = std::max(status, product(false, true, rows, keys, h.dim, h.scale(), q_band, ld, km,
                                        ld, 0.0f, probs, width));
      status = std::max(status, product(false, true, rows, keys, h.dim, 1.0f, do_band, dout_ld, vm,
                                        ld, 0.0f, dscores, width));  // dP
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t query = m * h.seq + first + i, seen = h.keys_seen(first + i);
        float *p = probs + i * width, *ds = dscores + i * width;
        const float row_lse = o.lse[query];
        // P is 0 past the keys seen, and so is dP past the band's keys: the row dot folds up to
        // a whole group of lanes (as the forward's softmax does), adding only zeros past the row.
        for (int64_t j = 0; j < width; ++j) p[j] = j < seen ? ops::exp_poly(p[j] - row_lse) : 0.0f;
        std::fill(ds + keys, ds + width, 0.0f);
        const float dot = o.row_dots ? o.row_dots[query]
                                     : ops::HostRowLanes{}.sum(
                                           padded(seen), [&](int64_t j) { return ds[j] * p[j]; });
        for (int64_t j = 0; j < keys; ++j) ds[j] = p[j] * (ds[j] - dot);
      }
      status = std::max(status, product(true, false, keys, h.dim, rows, 1.0f, probs, width, do_band,
                                        dout_ld, 1.0f, dvm, ld));
      status = std::max(status, product(false, false, rows, h.dim, keys, h.scale(), dscores, width,
                                        km, ld, o.accumulate ? 1.0f : 0.0f, dqm + first * ld, ld));
      status = std::max(status, product(true, false, keys, h.dim, rows, h.scale(), dscores, width,
                                        q_band, ld, 1.0f, dkm, ld));
    }
  });
}

}  // namespace

bool takes_cpu_banded_attention(const Tensor& q, const Tensor& score_bias) {
  return !q.device().is_cuda() && q.dtype() == DType::kF32 && !score_bias.defined();
}

void cpu_banded_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                  Tensor& out, Tensor& lse) {
  const Heads h{q.size(1), q.size(2), causal};
  const MatrixLayout layout = packed_layout(h, 1, h.dim);
  const ForwardOperands o{q.data_as<float>(),   k.data_as<float>(),
                          v.data_as<float>(),   layout,
                          out.data_as<float>(), layout,
                          lse.data_as<float>()};
  run_host_work([=, matrices = q.size(0)] { forward_bands(h, matrices, o); });
}

void cpu_banded_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const Tensor& dout, const Tensor& lse, bool causal,
                                   const Tensor& row_dots, AttentionHeadGradients& grads) {
  const Heads h{q.size(1), q.size(2), causal};
  const MatrixLayout layout = packed_layout(h, 1, h.dim);
  const BackwardOperands o{q.data_as<float>(),
                           k.data_as<float>(),
                           v.data_as<float>(),
                           dout.data_as<float>(),
                           lse.data_as<float>(),
                           row_dots.data_or_null<float>(),
                           layout,
                           layout,
                           grads.dq.data_as<float>(),
                           grads.dk.data_as<float>(),
                           grads.dv.data_as<float>(),
                           grads.accumulate};
  run_host_work([=, matrices = q.size(0)] { backward_bands(h, matrices, o); });
}

void cpu_packed_attention_forward(const Tensor& qkv, int64_t heads, bool causal, Tensor& out,
                                  Tensor& lse) {
  const int64_t channels = qkv.size(2) / 3;
  const Heads h{qkv.size(1), channels / heads, causal};
  const float* packed = qkv.data_as<float>();
  const ForwardOperands o{packed,
                          packed + channels,
                          packed + 2 * channels,
                          packed_layout(h, heads, 3 * channels),
                          out.data_as<float>(),
                          packed_layout(h, heads, channels),
                          lse.data_as<float>()};
  run_host_work([=, matrices = qkv.size(0) * heads] { forward_bands(h, matrices, o); });
}

void cpu_packed_attention_backward(const Tensor& qkv, const Tensor& dy, const Tensor& lse,
                                   int64_t heads, bool causal, Tensor& dqkv) {
  const int64_t channels = qkv.size(2) / 3;
  const Heads h{qkv.size(1), channels / heads, causal};
  const float* packed = qkv.data_as<float>();
  float* grads = dqkv.data_as<float>();
  const BackwardOperands o{packed,
                           packed + channels,
                           packed + 2 * channels,
                           dy.data_as<float>(),
                           lse.data_as<float>(),
                           nullptr,
                           packed_layout(h, heads, 3 * channels),
                           packed_layout(h, heads, channels),
                           grads,
                           grads + channels,
                           grads + 2 * channels,
                           false};
  run_host_work([=, matrices = qkv.size(0) * heads] { backward_bands(h, matrices, o); });
}

}  // namespace course::detail
