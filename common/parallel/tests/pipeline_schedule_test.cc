// The pipeline schedules against an independent reference: every schedule is run by a small
// event simulation of p stages (forward 1 time unit, backward 2, or 1 for its input-gradient
// half and 1 for its weight pass where zb-h1 splits it; zb-h1 also with other lengths), which
// must finish (no stage waits forever) in the time the course's formulas give.
#include "common/parallel/pipeline/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "common/core/error.h"
#include "common/parallel/pipeline/pipeline_measurement.h"

namespace course::parallel {
namespace {

using Kind = PipelineAction::Kind;

constexpr double kForwardTime = 1, kBackwardTime = 2;
// A backward split in two halves as long as a forward each.
constexpr PassCosts kEqualPasses = {kForwardTime, kBackwardTime / 2, kBackwardTime / 2};

struct Simulation {
  double makespan = 0;
  std::vector<double> busy;  // per stage
};

// Runs every rank's actions in order; an action starts once its rank is free and its input
// exists: the forward of the virtual stage before (chunk c of rank r is virtual stage c p + r),
// the backward of the one after. A pass takes its `costs` (an unsplit backward: its two halves),
// a chunk's 1/v of a stage's. Fails on a deadlock.
Simulation simulate(PipelineSchedule schedule, int p, int m, int v = 1,
                    const PassCosts& costs = kEqualPasses) {
  std::vector<std::vector<PipelineAction>> actions(p);
  for (int s = 0; s < p; ++s) actions[s] = schedule_actions(schedule, s, p, m, v);
  std::map<std::tuple<int, Kind, int>, double> done;  // (virtual stage, kind, micro) -> end
  std::vector<size_t> next(p, 0);
  std::vector<double> free_at(p, 0);
  Simulation sim{0, std::vector<double>(p, 0)};
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < p; ++s) {
      if (next[s] == actions[s].size()) continue;
      const PipelineAction a = actions[s][next[s]];
      const bool forward = a.kind == Kind::kForward;
      const int at = a.chunk * p + s;
      const int from = forward ? at - 1 : at + 1;
      double ready = free_at[s];
      if (a.kind != Kind::kWeight && from >= 0 && from < p * v) {
        const auto input = done.find({from, a.kind, a.micro_batch});
        if (input == done.end()) continue;
        ready = std::max(ready, input->second);
      }
      const bool weight = a.kind == Kind::kWeight, split = splits_backward(actions[s]);
      if (!forward && !done.count({at, weight ? Kind::kBackward : Kind::kForward, a.micro_batch})) {
        ADD_FAILURE() << "stage " << s << " runs " << action_name(a) << " before its "
                      << (weight ? "backward" : "forward");
        return sim;
      }
      const double length = (forward  ? costs.forward
                             : weight ? costs.weight
                             : split  ? costs.backward
                                      : costs.backward + costs.weight) /
                            v;
      done[{at, a.kind, a.micro_batch}] = free_at[s] = ready + length;
      sim.busy[s] += length;
      sim.makespan = std::max(sim.makespan, free_at[s]);
      ++next[s];
      progressed = true;
    }
  }
  for (int s = 0; s < p; ++s) {
    EXPECT_EQ(next[s], actions[s].size()) << pipeline_schedule_name(schedule) << " deadlocks";
  }
  return sim;
}

TEST(PipelineSchedule, EveryMicroBatchOnceForwardBeforeBackwardInOrder) {
  for (auto schedule : {PipelineSchedule::kNaive, PipelineSchedule::kGpipe,
                        PipelineSchedule::kOneForwardOneBackward}) {
    for (int p = 1; p <= 4; ++p) {
      for (int m = 1; m <= 8; ++m) {
        for (int s = 0; s < p; ++s) {
          const auto actions = schedule_actions(schedule, s, p, m);
          ASSERT_EQ(static_cast<int>(actions.size()), 2 * m);
          std::vector<int> forwards, backwards;
          for (const PipelineAction& a : actions) {
            (a.kind == Kind::kForward ? forwards : backwards).push_back(a.micro_batch);
            if (a.kind == Kind::kBackward) {
              EXPECT_TRUE(std::count(forwards.begin(), forwards.end(), a.micro_batch));
            }
          }
          std::vector<int> in_order(m);
          for (int i = 0; i < m; ++i) in_order[i] = i;
          EXPECT_EQ(forwards, in_order);
          EXPECT_EQ(backwards, in_order);  // gradients add in a single process's order
        }
      }
    }
  }
}

TEST(PipelineSchedule, MicroBatchesInFlight) {
  for (int p = 1; p <= 4; ++p) {
    for (int m = 1; m <= 8; ++m) {
      for (int s = 0; s < p; ++s) {
        EXPECT_EQ(micro_batches_in_flight(schedule_actions(PipelineSchedule::kNaive, s, p, m)), 1);
        EXPECT_EQ(micro_batches_in_flight(schedule_actions(PipelineSchedule::kGpipe, s, p, m)), m);
        EXPECT_EQ(micro_batches_in_flight(
                      schedule_actions(PipelineSchedule::kOneForwardOneBackward, s, p, m)),
                  std::min(p - s, m));
      }
    }
  }
}

// GPipe and 1F1B take (m + p - 1)(t_f + t_b); the naive schedule m p (t_f + t_b). The idle share
// of every stage is then the formula's bubble.
TEST(PipelineSchedule, SimulatedStepsTakeTheFormulasTime) {
  for (auto schedule : {PipelineSchedule::kNaive, PipelineSchedule::kGpipe,
                        PipelineSchedule::kOneForwardOneBackward}) {
    for (int p = 1; p <= 4; ++p) {
      for (int m = 1; m <= 8; ++m) {
        const Simulation sim = simulate(schedule, p, m);
        const double slots = schedule == PipelineSchedule::kNaive ? m * p : m + p - 1;
        EXPECT_DOUBLE_EQ(sim.makespan, slots * (kForwardTime + kBackwardTime))
            << pipeline_schedule_name(schedule) << " p " << p << " m " << m;
        for (int s = 0; s < p; ++s) {
          EXPECT_NEAR(1 - sim.busy[s] / sim.makespan, bubble_fraction(schedule, p, m), 1e-12);
        }
      }
    }
  }
}

// Interleaved 1F1B: every chunk sees every micro-batch once, forward before backward, backwards
// in micro-batch order; a rank holds at most Megatron-LM's warm-up plus one chunk activations;
// the simulated step is (m + (p - 1) / v)(t_f + t_b): the bubble (p - 1) / (v m + p - 1).
TEST(PipelineSchedule, InterleavedSchedule) {
  for (int p = 1; p <= 4; ++p) {
    for (int v = 2; v <= 3; ++v) {
      for (int m = p; m <= 4 * p; m += p) {
        const Simulation sim = simulate(PipelineSchedule::kInterleaved, p, m, v);
        EXPECT_NEAR(sim.makespan, (m + (p - 1.0) / v) * (kForwardTime + kBackwardTime), 1e-9)
            << "p " << p << " v " << v << " m " << m;
        for (int s = 0; s < p; ++s) {
          EXPECT_NEAR(1 - sim.busy[s] / sim.makespan,
                      bubble_fraction(PipelineSchedule::kInterleaved, p, m, v), 1e-9);
          const auto actions = schedule_actions(PipelineSchedule::kInterleaved, s, p, m, v);
          ASSERT_EQ(static_cast<int>(actions.size()), 2 * m * v);
          std::vector<std::vector<int>> forwards(v), backwards(v);
          for (const PipelineAction& a : actions) {
            (a.kind == Kind::kForward ? forwards : backwards)[a.chunk].push_back(a.micro_batch);
            if (a.kind == Kind::kBackward) {
              EXPECT_TRUE(
                  std::count(forwards[a.chunk].begin(), forwards[a.chunk].end(), a.micro_batch));
            }
          }
          std::vector<int> in_order(m);
          for (int i = 0; i < m; ++i) in_order[i] = i;
          for (int c = 0; c < v; ++c) {
            EXPECT_EQ(forwards[c], in_order);
            EXPECT_EQ(backwards[c], in_order);
          }
          EXPECT_EQ(micro_batches_in_flight(actions),
                    std::min((p - s - 1) * 2 + (v - 1) * p + 1, m * v));
        }
      }
    }
  }
  EXPECT_THROW(schedule_actions(PipelineSchedule::kInterleaved, 0, 2, 3, 2), Error);  // m % p
  EXPECT_THROW(schedule_actions(PipelineSchedule::kInterleaved, 0, 2, 4, 1), Error);
  EXPECT_THROW(schedule_actions(PipelineSchedule::kGpipe, 0, 2, 4, 2), Error);
}

// ZB-H1 on stage s: 1F1B's forwards and input-gradient passes, each weight pass s backwards
// after its backward. By hand, then for every shape: every pass once and in micro-batch order,
// at most p micro-batches held (1F1B's first stage's), and the simulated step 3 m + p - 1 units
// (one unit per pass) once m >= p, against 1F1B's 3 (m + p - 1): a third of its bubble.
TEST(PipelineSchedule, ZeroBubbleH1) {
  const auto names = [](const std::vector<PipelineAction>& actions) {
    std::string out;
    for (const PipelineAction& a : actions) out += (out.empty() ? "" : " ") + action_name(a);
    return out;
  };
  const auto zb = PipelineSchedule::kZeroBubbleH1;
  EXPECT_EQ(names(schedule_actions(zb, 3, 4, 5)), "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 W2 W3 W4");
  EXPECT_EQ(names(schedule_actions(zb, 1, 4, 5)), "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 B3 W2 B4 W3 W4");
  EXPECT_EQ(names(schedule_actions(zb, 0, 4, 5)), "F0 F1 F2 F3 B0 W0 F4 B1 W1 B2 W2 B3 W3 B4 W4");
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 12; ++m) {
      const Simulation sim = simulate(zb, p, m);
      const double expected = 3 * m + p - 1 + std::max(0, p - m);
      EXPECT_DOUBLE_EQ(sim.makespan, expected) << "p " << p << " m " << m;
      for (int s = 0; s < p; ++s) {
        const auto actions = schedule_actions(zb, s, p, m);
        EXPECT_NO_THROW(check_action_list(actions, s, m, 1));
        std::map<Kind, std::vector<int>> order;
        for (const PipelineAction& a : actions) order[a.kind].push_back(a.micro_batch);
        for (const auto& [kind, micro_batches] : order) {
          EXPECT_TRUE(std::is_sorted(micro_batches.begin(), micro_batches.end()));
        }
        EXPECT_EQ(micro_batches_in_flight(actions), std::min(p, m)) << "p " << p << " stage " << s;
        EXPECT_NEAR(1 - sim.busy[s] / sim.makespan, bubble_fraction(zb, p, m), 1e-12);
      }
      if (m >= p) {
        const double one_f_one_b = (m + p - 1) * (kForwardTime + kBackwardTime);
        EXPECT_DOUBLE_EQ(one_f_one_b - 3 * m, 3 * (sim.makespan - 3 * m));  // a third
      }
    }
  }
}

// With passes of other lengths (W shorter than B as on CPUs, longer, the shortest of all),
// ZB-H1 idles (p - 1)(F + B) - (min(m, p) - 1) min(F, B, W): its bubble for those costs, which
// the pipeline benchmark prints beside the measured one. GPipe and 1F1B (whose backward is
// B + W) keep (p - 1) / (m + p - 1) whatever the lengths.
TEST(PipelineSchedule, ZeroBubbleH1WithUnequalPasses) {
  const auto zb = PipelineSchedule::kZeroBubbleH1;
  for (const PassCosts costs : {PassCosts{1, 1, 0.5}, PassCosts{1, 2, 1}, PassCosts{1, 0.6, 0.4},
                                PassCosts{0.5, 1, 1.5}, PassCosts{1, 0.3, 0.9}}) {
    for (int p = 1; p <= 6; ++p) {
      for (int m = 1; m <= 12; ++m) {
        const std::string what =
            "F " + std::to_string(costs.forward) + " B " + std::to_string(costs.backward) + " W " +
            std::to_string(costs.weight) + " p " + std::to_string(p) + " m " + std::to_string(m);
        const Simulation sim = simulate(zb, p, m, 1, costs);
        for (int s = 0; s < p; ++s) {
          EXPECT_NEAR(1 - sim.busy[s] / sim.makespan, bubble_fraction(zb, p, m, 1, costs), 1e-12)
              << what;
        }
        const Simulation one_f_one_b =
            simulate(PipelineSchedule::kOneForwardOneBackward, p, m, 1, costs);
        EXPECT_NEAR(1 - one_f_one_b.busy[0] / one_f_one_b.makespan,
                    bubble_fraction(PipelineSchedule::kOneForwardOneBackward, p, m, 1, costs),
                    1e-12)
            << what;
      }
    }
  }
  // On these CPUs (F 3.1, B 2.9, W 1.8 ms on 2 stages) the bubble at m = 8 is 0.57 of 1F1B's, by
  // hand: idle 6.0 - 1.8 = 4.2 of a step 8 x 7.8 + 4.2, against 1 / 9.
  const PassCosts measured = {3.1, 2.9, 1.8};
  EXPECT_NEAR(bubble_fraction(zb, 2, 8, 1, measured) /
                  bubble_fraction(PipelineSchedule::kOneForwardOneBackward, 2, 8, 1, measured),
              (4.2 / (8 * 7.8 + 4.2)) / (1.0 / 9), 1e-12);
}

// The costs the formula takes, from a measured timeline: each kind's mean length, 0 for none.
TEST(PipelineSchedule, MeanPassCostsOfATimeline) {
  const std::vector<TimedAction> timeline = {{{Kind::kForward, 0}, 0.0, 1.0},
                                             {{Kind::kForward, 1}, 1.0, 3.5},
                                             {{Kind::kBackward, 0}, 4.0, 6.0}};
  const PassCosts costs = mean_pass_costs(timeline);
  EXPECT_DOUBLE_EQ(costs.forward, 1.75);
  EXPECT_DOUBLE_EQ(costs.backward, 2.0);
  EXPECT_DOUBLE_EQ(costs.weight, 0.0);
}

// A list must hold each pass of every micro-batch once: weight passes for all or none.
TEST(PipelineSchedule, ActionListsAreChecked) {
  using A = PipelineAction;
  EXPECT_NO_THROW(check_action_list({{Kind::kForward, 0}, {Kind::kBackward, 0}}, 0, 1, 1));
  EXPECT_THROW(check_action_list({{Kind::kForward, 0}}, 0, 1, 1), Error);
  EXPECT_THROW(check_action_list({{Kind::kForward, 0},
                                  {Kind::kBackward, 0},
                                  A{Kind::kForward, 1},
                                  {Kind::kBackward, 1},
                                  {Kind::kWeight, 1}},
                                 0, 2, 1),
               Error);  // W0 missing
  EXPECT_THROW(check_action_list({{Kind::kForward, 2}, {Kind::kBackward, 2}}, 0, 2, 1), Error);
}

TEST(PipelineSchedule, NamesRoundTripAndUnknownOnesAreRefused) {
  for (auto schedule : {PipelineSchedule::kNaive, PipelineSchedule::kGpipe,
                        PipelineSchedule::kOneForwardOneBackward, PipelineSchedule::kZeroBubbleH1,
                        PipelineSchedule::kInterleaved}) {
    EXPECT_EQ(parse_pipeline_schedule(pipeline_schedule_name(schedule)), schedule);
  }
  EXPECT_THROW(parse_pipeline_schedule("zero-bubble"), Error);
}

}  // namespace
}  // namespace course::parallel
