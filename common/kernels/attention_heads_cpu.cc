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
  int64_t size() const { return seq * dim; }
  // The keys that queries [first, first + rows) see between them.
  int64_t band_keys(int64_t first, int64_t rows) const { return causal ? first + rows : seq; }
  int64_t keys_seen(int64_t query) const { return causal ? query + 1 : seq; }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(dim)); }
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

// softmax_row's probabilities and log-sum-exp of row[0, count), in place: the same sums in the
// same order, each exponential taken once and kept, where softmax_row takes it twice.
float softmax_in_place(float* row, int64_t count) {
  const ops::HostRowLanes lanes;
  const float top = lanes.max(count, [row](int64_t j) { return row[j]; });
  for (int64_t j = 0; j < count; ++j) row[j] = ops::exp_poly(row[j] - top);
  const float total = lanes.sum(count, [row](int64_t j) { return row[j]; });
  for (int64_t j = 0; j < count; ++j) row[j] /= total;
  return top + std::log(total);
}

}  // namespace

bool takes_cpu_banded_attention(const Tensor& q, const Tensor& score_bias) {
  return !q.device().is_cuda() && q.dtype() == DType::kF32 && !score_bias.defined();
}

void cpu_banded_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                  Tensor& out, Tensor& lse) {
  const Heads h{q.size(1), q.size(2), causal};
  run_host_work([=, matrices = q.size(0), pq = q.data_as<float>(), pk = k.data_as<float>(),
                 pv = v.data_as<float>(), po = out.data_as<float>(), plse = lse.data_as<float>()] {
    each_matrix(matrices, kBandRows * h.seq, [&](int64_t m, float* scores, int& status) {
      const float *qm = pq + m * h.size(), *km = pk + m * h.size(), *vm = pv + m * h.size();
      for (int64_t first = 0; first < h.seq; first += kBandRows) {
        const int64_t rows = std::min(kBandRows, h.seq - first);
        const int64_t keys = h.band_keys(first, rows);
        status =
            std::max(status, product(false, true, rows, keys, h.dim, h.scale(), qm + first * h.dim,
                                     h.dim, km, h.dim, 0.0f, scores, keys));
        for (int64_t i = 0; i < rows; ++i) {
          float* row = scores + i * keys;
          const int64_t seen = h.keys_seen(first + i);
          plse[m * h.seq + first + i] = softmax_in_place(row, seen);
          std::fill(row + seen, row + keys, 0.0f);
        }
        status = std::max(status, product(false, false, rows, h.dim, keys, 1.0f, scores, keys, vm,
                                          h.dim, 0.0f, po + m * h.size() + first * h.dim, h.dim));
      }
    });
  });
}

void cpu_banded_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const Tensor& dout, const Tensor& lse, bool causal,
                                   const Tensor& row_dots, AttentionHeadGradients& grads) {
  const Heads h{q.size(1), q.size(2), causal};
  const float* given_dots = row_dots.defined() ? row_dots.data_as<float>() : nullptr;
  run_host_work([=, matrices = q.size(0), accumulate = grads.accumulate, pq = q.data_as<float>(),
                 pk = k.data_as<float>(), pv = v.data_as<float>(), pdo = dout.data_as<float>(),
                 plse = lse.data_as<float>(), pdq = grads.dq.data_as<float>(),
                 pdk = grads.dk.data_as<float>(), pdv = grads.dv.data_as<float>()] {
    // Scratch: a band's probabilities P, then its dP turned into dS in place.
    each_matrix(matrices, 2 * kBandRows * h.seq, [&](int64_t m, float* scratch, int& status) {
      const int64_t at = m * h.size();
      const float *qm = pq + at, *km = pk + at, *vm = pv + at, *dom = pdo + at;
      float *dqm = pdq + at, *dkm = pdk + at, *dvm = pdv + at;
      if (!accumulate) {
        std::fill(dkm, dkm + h.size(), 0.0f);
        std::fill(dvm, dvm + h.size(), 0.0f);
      }
      for (int64_t first = 0; first < h.seq; first += kBandRows) {
        const int64_t rows = std::min(kBandRows, h.seq - first);
        const int64_t keys = h.band_keys(first, rows);
        float *probs = scratch, *dscores = scratch + kBandRows * h.seq;
        const float *q_band = qm + first * h.dim, *do_band = dom + first * h.dim;
        status = std::max(status, product(false, true, rows, keys, h.dim, h.scale(), q_band, h.dim,
                                          km, h.dim, 0.0f, probs, keys));
        status = std::max(status, product(false, true, rows, keys, h.dim, 1.0f, do_band, h.dim, vm,
                                          h.dim, 0.0f, dscores, keys));  // dP
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t query = m * h.seq + first + i, seen = h.keys_seen(first + i);
          float *p = probs + i * keys, *ds = dscores + i * keys;
          const float row_lse = plse[query];
          for (int64_t j = 0; j < keys; ++j) p[j] = j < seen ? ops::exp_poly(p[j] - row_lse) : 0.0f;
          const float dot =
              given_dots ? given_dots[query]
                         : ops::HostRowLanes{}.sum(keys, [&](int64_t j) { return ds[j] * p[j]; });
          for (int64_t j = 0; j < keys; ++j) ds[j] = p[j] * (ds[j] - dot);
        }
        status = std::max(status, product(true, false, keys, h.dim, rows, 1.0f, probs, keys,
                                          do_band, h.dim, 1.0f, dvm, h.dim));
        status =
            std::max(status, product(false, false, rows, h.dim, keys, h.scale(), dscores, keys, km,
                                     h.dim, accumulate ? 1.0f : 0.0f, dqm + first * h.dim, h.dim));
        status = std::max(status, product(true, false, keys, h.dim, rows, h.scale(), dscores, keys,
                                          q_band, h.dim, 1.0f, dkm, h.dim));
      }
    });
  });
}

}  // namespace course::detail
