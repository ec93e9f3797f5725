// DeepSpeed's OnebitLamb transcribed (deepspeed_onebit.h).
#include "common/parallel/tests/deepspeed_onebit.h"

#include <algorithm>
#include <random>

namespace course::parallel {

namespace {

double norm_of(const std::vector<float>& v) {
  double squares = 0;
  for (const float x : v) squares += static_cast<double>(x) * x;
  return std::sqrt(squares);
}

int64_t total_size(const std::vector<std::vector<float>>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors) n += static_cast<int64_t>(t.size());
  return n;
}

}  // namespace

std::vector<float> seeded_values(int64_t n, int rank, int step) {
  std::mt19937 rng(977 * step + 31 * rank + 5);
  std::normal_distribution<float> normal(0.1f * static_cast<float>(rank - 1), 1.0f);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i % 11 == 4 ? 0.0f : normal(rng);
  return v;
}

DeepSpeedOnebitLamb::DeepSpeedOnebitLamb(std::vector<std::vector<float>> params, const Hyper& hyper,
                                         int ranks, std::vector<std::vector<float>> masks)
    : h_(hyper),
      ranks_(ranks),
      w_(std::move(params)),
      masks_(std::move(masks)),
      allreduce_({total_size(w_)}, ranks) {
  for (const auto& w : w_) {
    const std::vector<float> zero(w.size(), 0.0f);
    state_.push_back({zero, zero, zero});
  }
}

void DeepSpeedOnebitLamb::step(const std::vector<std::vector<std::vector<float>>>& grads) {
  ++steps_;
  if (steps_ <= h_.freeze_step) {
    for (size_t t = 0; t < w_.size(); ++t) warmup(t, grads[0][t]);
  } else {
    compressed(grads);
  }
}

// The warm-up branch: baseline LAMB without bias correction, the coefficient's average kept.
void DeepSpeedOnebitLamb::warmup(size_t t, const std::vector<float>& g) {
  Moments& s = state_[t];
  std::vector<float>& w = w_[t];
  const size_t n = w.size();
  for (size_t i = 0; i < n; ++i) {
    s.m[i] = s.m[i] * h_.beta1 + (1 - h_.beta1) * g[i];
    s.v[i] = s.v[i] * h_.beta2 + (1 - h_.beta2) * g[i] * g[i];
  }
  if (steps_ == h_.freeze_step) s.fresh = s.v;
  std::vector<float> update(n);
  for (size_t i = 0; i < n; ++i) {
    update[i] = s.m[i] / (std::sqrt(s.v[i]) + h_.eps);
    if (h_.weight_decay > 0.0f) update[i] += h_.weight_decay * w[i];
  }
  const double weight_norm = norm_of(w), update_norm = norm_of(update);
  double coeff = 1.0;
  if (weight_norm != 0 && update_norm != 0) {
    coeff = std::clamp(weight_norm / update_norm, double{h_.min_coeff}, double{h_.max_coeff});
  }
  if (coeff != 1.0) s.frozen = h_.coeff_beta * s.frozen + (1 - h_.coeff_beta) * coeff;
  for (size_t i = 0; i < n; ++i) w[i] += static_cast<float>(-h_.lr * coeff) * update[i];
}

// scaling_coeff: the mean over the tensors of norm / sqrt(numel), over the tensor's own.
void DeepSpeedOnebitLamb::take_scalings() {
  std::vector<double> scales;
  for (const Moments& s : state_) {
    scales.push_back(norm_of(s.m) / std::sqrt(static_cast<double>(s.m.size())));
  }
  const double united = std::accumulate(scales.begin(), scales.end(), 0.0) / scales.size();
  for (size_t t = 0; t < state_.size(); ++t) state_[t].scaling = united / scales[t];
}

void DeepSpeedOnebitLamb::compressed(const std::vector<std::vector<std::vector<float>>>& grads) {
  std::vector<std::vector<float>> m_last;
  for (const Moments& s : state_) m_last.push_back(s.m);
  if (steps_ == h_.freeze_step + 1) take_scalings();
  // Each rank's momentum, scaled and flattened: exp_avg_flat.
  std::vector<std::vector<std::vector<float>>> flat(ranks_, std::vector<std::vector<float>>(1));
  for (int r = 0; r < ranks_; ++r) {
    for (size_t t = 0; t < w_.size(); ++t) {
      const Moments& s = state_[t];
      for (size_t i = 0; i < s.m.size(); ++i) {
        float m = s.m[i] * h_.beta1 + (1 - h_.beta1) * grads[r][t][i];
        flat[r][0].push_back(m * static_cast<float>(s.scaling));
      }
    }
  }
  const std::vector<float> averaged = allreduce_.average(flat)[0];
  size_t at = 0;
  for (size_t t = 0; t < w_.size(); ++t) {
    std::vector<float>& m = state_[t].m;
    std::copy(averaged.begin() + at, averaged.begin() + at + m.size(), m.begin());
    at += m.size();
    compressed_tensor(t, m_last[t]);
  }
}

// The compression branch's update of one tensor from its averaged momentum.
void DeepSpeedOnebitLamb::compressed_tensor(size_t t, const std::vector<float>& m_last) {
  Moments& s = state_[t];
  std::vector<float>& w = w_[t];
  const size_t n = w.size();
  std::vector<float> prelim(n), update(n);
  double factor = 0.0;
  for (size_t i = 0; i < n; ++i) {
    s.m[i] /= static_cast<float>(s.scaling);
    if (!masks_.empty()) s.m[i] *= masks_[t][i];
    const float g = (s.m[i] - m_last[i] * h_.beta1) / (1 - h_.beta1);
    s.fresh[i] = s.fresh[i] * h_.beta2 + (1 - h_.beta2) * g * g;
    const float denom = std::sqrt(s.v[i]) + h_.eps;
    prelim[i] = s.m[i] / denom;
    update[i] = h_.weight_decay > 0.0f ? prelim[i] + h_.weight_decay * w[i] : prelim[i];
    factor = std::max(factor, double{denom / (std::sqrt(s.fresh[i]) + h_.eps)});
  }
  const double update_norm = norm_of(update);
  if (h_.weight_decay > 0.0f) {
    const double ratio = std::min(1.0, norm_of(prelim) / update_norm);
    factor = factor * ratio + (1.0 - ratio);
  }
  factor = std::clamp(factor, double{h_.factor_min}, double{h_.factor_max});
  factor = std::clamp(factor, s.last_factor * (1.0 - h_.factor_threshold),
                      s.last_factor * (1.0 + h_.factor_threshold));
  s.last_factor = factor;
  const double coeff = s.frozen * factor;
  for (size_t i = 0; i < n; ++i) w[i] += static_cast<float>(-h_.lr * coeff) * update[i];
}

}  // namespace course::parallel
