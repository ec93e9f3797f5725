// Learning-rate schedules.
#include "common/optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/core/error.h"
#include "common/core/named_choices.h"

namespace course::optim {

namespace {

// From `start` (pct 0) to `end` (pct 1) along half a cosine.
float anneal_cos(float start, float end, float pct) {
  return end + (start - end) / 2.0f * (std::cos(std::numbers::pi_v<float> * pct) + 1.0f);
}

class Constant : public Schedule {
 public:
  explicit Constant(float lr) : lr_(lr) {}
  float lr_at(int64_t) const override { return lr_; }

 private:
  float lr_;
};

class OneCycle : public Schedule {
 public:
  OneCycle(float max_lr, int64_t total, float pct_start, float div, float final_div)
      : max_lr_(max_lr),
        initial_(max_lr / div),
        final_(max_lr / div / final_div),
        peak_step_(pct_start * static_cast<float>(total) - 1.0f),
        last_step_(static_cast<float>(total - 1)) {
    COURSE_CHECK(total > 1 && pct_start > 0 && pct_start < 1 && peak_step_ > 0,
                 "one-cycle needs more than one step per phase, and ", total,
                 " step(s) at pct_start ", pct_start,
                 " leave a phase without one: train more steps (more --epochs, a larger "
                 "--train-subset or a smaller --batch-size) or choose another --schedule where "
                 "the lab has one");
  }
  float lr_at(int64_t step) const override {
    const float s = std::min(static_cast<float>(step), last_step_);
    if (s <= peak_step_) return anneal_cos(initial_, max_lr_, s / peak_step_);
    return anneal_cos(max_lr_, final_, (s - peak_step_) / (last_step_ - peak_step_));
  }

 private:
  float max_lr_, initial_, final_, peak_step_, last_step_;
};

class Cosine : public Schedule {
 public:
  Cosine(float lr, int64_t total, float eta_min) : lr_(lr), total_(total), eta_min_(eta_min) {
    COURSE_CHECK(total > 0, "cosine schedule needs at least one step");
  }
  float lr_at(int64_t step) const override {
    const float pct = std::min(static_cast<float>(step) / static_cast<float>(total_), 1.0f);
    return anneal_cos(lr_, eta_min_, pct);
  }

 private:
  float lr_;
  int64_t total_;
  float eta_min_;
};

// DeepSpeed's WarmupDecayLR after its warm-up: lr until `start`, then linearly to 0 at `total`.
class LinearDecay : public Schedule {
 public:
  LinearDecay(float lr, int64_t start, int64_t total) : lr_(lr), start_(start), total_(total) {
    COURSE_CHECK(total > start, "a linear decay needs steps after its warm-up: ", total,
                 " step(s) with ", start, " of warm-up");
  }
  float lr_at(int64_t step) const override {
    if (step <= start_) return lr_;
    const float left = static_cast<float>(total_ - step) / static_cast<float>(total_ - start_);
    return lr_ * std::max(left, 0.0f);
  }

 private:
  float lr_;
  int64_t start_, total_;
};

class Warmup : public Schedule {
 public:
  Warmup(std::unique_ptr<Schedule> inner, int64_t steps, WarmupShape shape)
      : inner_(std::move(inner)),
        steps_(shape == WarmupShape::kLog ? std::max<int64_t>(steps, 2) : steps),
        shape_(shape) {}
  float lr_at(int64_t step) const override {
    const float target = inner_->lr_at(step);
    const double iteration = static_cast<double>(step + 1), steps = static_cast<double>(steps_);
    if (iteration >= steps) return target;
    const double rise =
        shape_ == WarmupShape::kLog ? std::log(iteration + 1) / std::log(steps) : iteration / steps;
    return static_cast<float>(target * rise);
  }

 private:
  std::unique_ptr<Schedule> inner_;
  int64_t steps_;
  WarmupShape shape_;
};

}  // namespace

std::unique_ptr<Schedule> constant_schedule(float lr) { return std::make_unique<Constant>(lr); }

std::unique_ptr<Schedule> one_cycle_schedule(float max_lr, int64_t total_steps, float pct_start,
                                             float div_factor, float final_div_factor) {
  return std::make_unique<OneCycle>(max_lr, total_steps, pct_start, div_factor, final_div_factor);
}

std::unique_ptr<Schedule> cosine_schedule(float lr, int64_t total_steps, float eta_min) {
  return std::make_unique<Cosine>(lr, total_steps, eta_min);
}

std::unique_ptr<Schedule> with_warmup(std::unique_ptr<Schedule> inner, int64_t warmup_steps,
                                      WarmupShape shape) {
  COURSE_CHECK(warmup_steps >= 0, "warm-up steps must not be negative");
  if (warmup_steps == 0) return inner;
  return std::make_unique<Warmup>(std::move(inner), warmup_steps, shape);
}

const char* warmup_shape_name(WarmupShape shape) {
  return shape == WarmupShape::kLog ? "log" : "linear";
}

const char* schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kOneCycle:
      return "one-cycle";
    case ScheduleKind::kCosine:
      return "cosine";
    case ScheduleKind::kConstant:
      return "constant";
    case ScheduleKind::kLinear:
      return "linear";
  }
  COURSE_FAIL("schedule kind ", static_cast<int>(kind), " has no name");
}

std::vector<std::pair<std::string, ScheduleKind>> schedule_choices() {
  return named_choices({ScheduleKind::kOneCycle, ScheduleKind::kCosine, ScheduleKind::kConstant,
                        ScheduleKind::kLinear},
                       schedule_name);
}

std::unique_ptr<Schedule> make_schedule(ScheduleKind kind, float lr, int64_t total_steps,
                                        int64_t warmup_steps, float eta_min, WarmupShape shape) {
  std::unique_ptr<Schedule> schedule;
  switch (kind) {
    case ScheduleKind::kOneCycle:
      schedule = one_cycle_schedule(lr, total_steps);
      break;
    case ScheduleKind::kCosine:
      schedule = cosine_schedule(lr, total_steps, eta_min);
      break;
    case ScheduleKind::kConstant:
      schedule = constant_schedule(lr);
      break;
    case ScheduleKind::kLinear:
      schedule = std::make_unique<LinearDecay>(lr, warmup_steps, total_steps);
      break;
  }
  return with_warmup(std::move(schedule), warmup_steps, shape);
}

}  // namespace course::optim
