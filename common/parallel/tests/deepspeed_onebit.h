// DeepSpeed's 1-bit algorithms transcribed from its Python for a whole world in one process,
// written without the course's kernels, as the references of the 1-bit tests: every rank knows
// every rank's seeded inputs, so each rank computes what every rank would.
#pragma once

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace course::parallel {

// Signed values with exact zeros, different on every rank and step.
std::vector<float> seeded_values(int64_t n, int rank, int step);

// DeepSpeed's compressed_allreduce (runtime/comm/nccl.py) transcribed from its code for a
// whole world in one process, without the course's kernels: one call per tensor, the tensor
// padded with zeros to a multiple of size x lcm(size, 8); worker: buffer + worker_error, scale
// = norm / sqrt(numel), sign = sign().add_(1).bool() as +-1, worker_error = buffer - scale sign;
// server q: the sum over ranks of sign x (scale x 1 / size) over its chunk, + server_error, its
// own norm / sqrt(numel) and signs, server_error kept; the result every server's chunk
// concatenated, cut to the tensor's size. Size 1: DeepSpeed skips the call.
class DeepSpeedCompressedAllreduce {
 public:
  DeepSpeedCompressedAllreduce(const std::vector<int64_t>& sizes, int ranks) : ranks_(ranks) {
    const int64_t divider = std::lcm(ranks, 8);
    for (const int64_t size : sizes) {
      int64_t corrected = size;
      if (size % (ranks * divider) != 0) corrected += ranks * divider - size % (ranks * divider);
      tensors_.push_back(
          {size, corrected, std::vector<std::vector<float>>(ranks, std::vector<float>(corrected)),
           std::vector<std::vector<float>>(ranks, std::vector<float>(corrected / ranks))});
    }
  }

  // inputs[r][t]: rank r's tensor t. Returns tensor t as every rank receives it.
  std::vector<std::vector<float>> average(
      const std::vector<std::vector<std::vector<float>>>& inputs) {
    std::vector<std::vector<float>> out;
    for (size_t t = 0; t < tensors_.size(); ++t) {
      std::vector<std::vector<float>> mine;
      for (int r = 0; r < ranks_; ++r) mine.push_back(inputs[r][t]);
      out.push_back(ranks_ == 1 ? mine[0] : compressed_allreduce(tensors_[t], mine));
    }
    return out;
  }

 private:
  struct State {
    int64_t size, corrected;
    std::vector<std::vector<float>> worker_error, server_error;  // per rank
  };

  static float rms(const std::vector<float>& v) {
    double squares = 0;
    for (const float x : v) squares += static_cast<double>(x) * x;
    return static_cast<float>(std::sqrt(squares)) / std::sqrt(static_cast<float>(v.size()));
  }
  static float sign_of(float v) { return v < 0.0f ? -1.0f : 1.0f; }

  // Each rank's worker: its signs, its scale, its error kept.
  float worker(State& s, int r, const std::vector<float>& in, std::vector<float>& signs) {
    std::vector<float> buffer(s.corrected, 0.0f);
    for (int64_t i = 0; i < s.size; ++i) buffer[i] = in[i];
    for (int64_t i = 0; i < s.corrected; ++i) buffer[i] += s.worker_error[r][i];
    const float scale = rms(buffer);
    for (int64_t i = 0; i < s.corrected; ++i) {
      signs.push_back(sign_of(buffer[i]));
      s.worker_error[r][i] = buffer[i] - scale * signs[i];
    }
    return scale;
  }

  std::vector<float> compressed_allreduce(State& s, const std::vector<std::vector<float>>& in) {
    std::vector<std::vector<float>> signs(ranks_);
    std::vector<float> worker_scale(ranks_);
    for (int r = 0; r < ranks_; ++r) worker_scale[r] = worker(s, r, in[r], signs[r]);
    const int64_t chunk = s.corrected / ranks_;
    std::vector<float> result(s.corrected);
    for (int q = 0; q < ranks_; ++q) {
      std::vector<float> compensated(chunk, 0.0f);
      for (int64_t j = 0; j < chunk; ++j) {
        for (int r = 0; r < ranks_; ++r) {
          compensated[j] += signs[r][q * chunk + j] * (worker_scale[r] * (1.0f / ranks_));
        }
        compensated[j] += s.server_error[q][j];
      }
      const float server_scale = rms(compensated);
      for (int64_t j = 0; j < chunk; ++j) {
        const float sent = server_scale * sign_of(compensated[j]);
        s.server_error[q][j] = compensated[j] - sent;
        result[q * chunk + j] = sent;
      }
    }
    result.resize(s.size);
    return result;
  }

  int ranks_;
  std::vector<State> tensors_;
};

// DeepSpeed's OnebitLamb.step (runtime/fp16/onebit/lamb.py) for a world of `ranks`, step by
// step, without its first call (which only allocates and moves nothing) and in double for the
// norms, as .item() reads them. Tensors are flattened in order into one momentum buffer for the
// compressed all-reduce, as its exp_avg_flat; `masks` (empty, or one per tensor) is the param
// group's exp_avg_mask.
class DeepSpeedOnebitLamb {
 public:
  struct Hyper {
    float lr, beta1, beta2, eps, weight_decay;
    int64_t freeze_step;
    float max_coeff = 10.0f, min_coeff = 0.01f, coeff_beta = 0.9f;
    float factor_max = 4.0f, factor_min = 0.5f, factor_threshold = 0.1f;
  };
  DeepSpeedOnebitLamb(std::vector<std::vector<float>> params, const Hyper& hyper, int ranks,
                      std::vector<std::vector<float>> masks = {});
  // grads[r][t]: rank r's gradient of tensor t (in the warm-up, what the engine's all-reduce
  // gave every rank).
  void step(const std::vector<std::vector<std::vector<float>>>& grads);
  const std::vector<std::vector<float>>& params() const { return w_; }

 private:
  struct Moments {
    std::vector<float> m, v, fresh;
    double frozen = 0.0, last_factor = 1.0, scaling = 1.0;
  };
  void warmup(size_t t, const std::vector<float>& g);
  void take_scalings();
  void compressed(const std::vector<std::vector<std::vector<float>>>& grads);
  void compressed_tensor(size_t t, const std::vector<float>& m_last);

  Hyper h_;
  int ranks_;
  int64_t steps_ = 0;
  std::vector<std::vector<float>> w_, masks_;
  std::vector<Moments> state_;
  DeepSpeedCompressedAllreduce allreduce_;
};

}  // namespace course::parallel
