// Learning-rate schedules, stepped once per iteration as the course does.
//   one-cycle: cosine from max_lr/div up to max_lr over pct_start of the steps, then cosine down
//              to max_lr/(div*final_div) (PyTorch's OneCycleLR defaults: 0.3, 25, 1e4);
//   cosine:    from lr down to eta_min over the steps;
//   constant;
//   linear:    from lr after the warm-up down to 0 at the last step (DeepSpeed's WarmupDecayLR);
//   and any of them behind a warm-up from 0: linear, or DeepSpeed's logarithmic one (WarmupLR's
//   default, warmup_type "log").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace course::optim {

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual float lr_at(int64_t step) const = 0;  // step counts from 0
};

std::unique_ptr<Schedule> constant_schedule(float lr);
std::unique_ptr<Schedule> one_cycle_schedule(float max_lr, int64_t total_steps,
                                             float pct_start = 0.3f, float div_factor = 25.0f,
                                             float final_div_factor = 1e4f);
std::unique_ptr<Schedule> cosine_schedule(float lr, int64_t total_steps, float eta_min = 0.0f);
// How the rate rises over the warm-up: as DeepSpeed's WarmupLR at its iteration i = step + 1
// (its first step having been taken), the rate is the target times i / N (linear) or
// log(i + 1) / log(N) (log, with N at least 2 as DeepSpeed takes it), the target from step N.
enum class WarmupShape { kLinear, kLog };
std::unique_ptr<Schedule> with_warmup(std::unique_ptr<Schedule> inner, int64_t warmup_steps,
                                      WarmupShape shape = WarmupShape::kLinear);
const char* warmup_shape_name(WarmupShape shape);  // "linear", "log"

// The labs' --schedule (day 3) and --lr-schedule (day 4), parsed once.
enum class ScheduleKind { kOneCycle, kCosine, kConstant, kLinear };

// "one-cycle", "cosine", "constant", "linear"; and every kind with its name, for the flags.
const char* schedule_name(ScheduleKind kind);
std::vector<std::pair<std::string, ScheduleKind>> schedule_choices();

// `kind` behind `warmup_steps` of warm-up of `shape`; cosine decays to eta_min.
std::unique_ptr<Schedule> make_schedule(ScheduleKind kind, float lr, int64_t total_steps,
                                        int64_t warmup_steps, float eta_min = 0.0f,
                                        WarmupShape shape = WarmupShape::kLinear);

}  // namespace course::optim
