// The lockstep timetable of a pipeline step.
#include "common/parallel/pipeline_rounds.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "common/core/error.h"

namespace course::parallel {

namespace {

using Kind = PipelineAction::Kind;

}  // namespace

std::optional<StageMessage> action_input(const PipelineAction& a, int stage, int stages,
                                         int virtual_stages) {
  if (a.kind == Kind::kWeight) return std::nullopt;  // its backward's work, on this stage
  const int at = a.chunk * stages + stage, last = stages * virtual_stages - 1;
  if (a.kind == Kind::kForward) {
    if (at == 0) return std::nullopt;
    return StageMessage{.gradient = false, .micro_batch = a.micro_batch, .to = at};
  }
  if (at == last) return std::nullopt;
  return StageMessage{.gradient = true, .micro_batch = a.micro_batch, .to = at};
}

std::optional<StageMessage> action_output(const PipelineAction& a, int stage, int stages,
                                          int virtual_stages) {
  if (a.kind == Kind::kWeight) return std::nullopt;
  const int at = a.chunk * stages + stage, last = stages * virtual_stages - 1;
  if (a.kind == Kind::kForward) {
    if (at == last) return std::nullopt;
    return StageMessage{.gradient = false, .micro_batch = a.micro_batch, .to = at + 1};
  }
  if (at == 0) return std::nullopt;
  return StageMessage{.gradient = true, .micro_batch = a.micro_batch, .to = at - 1};
}

std::vector<std::vector<PipelineRound>> pipeline_rounds(
    const std::vector<std::vector<PipelineAction>>& actions, int virtual_stages) {
  const int stages = static_cast<int>(actions.size());
  COURSE_CHECK(stages >= 1 && virtual_stages >= 1, "a pipeline of ", stages, " stages and ",
               virtual_stages, " chunks per stage");
  std::vector<std::vector<PipelineRound>> rounds(stages);
  std::vector<size_t> next(stages, 0);
  std::vector<std::set<StageMessage>> arrived(stages);
  // (chunk, micro-batch) whose forward, whose backward is done
  std::vector<std::set<std::pair<int, int>>> forwarded(stages), backwarded(stages);
  const auto done = [&] {
    for (int s = 0; s < stages; ++s) {
      if (next[s] < actions[s].size()) return false;
    }
    return true;
  };
  while (!done()) {
    std::vector<PipelineRound> round(stages);
    std::vector<std::pair<int, StageMessage>> delivered;  // usable from the next round on
    bool progress = false;
    // The weight passes that follow in stage s's list join its round (after its action).
    const auto take_weight_passes = [&](int s) {
      while (next[s] < actions[s].size() && actions[s][next[s]].kind == Kind::kWeight) {
        const PipelineAction& w = actions[s][next[s]++];
        COURSE_CHECK(w.chunk >= 0 && w.chunk < virtual_stages &&
                         backwarded[s].count({w.chunk, w.micro_batch}) > 0,
                     "stage ", s, " runs ", action_name(w), " before its backward");
        round[s].weight_passes.push_back(w);
        progress = true;
      }
    };
    for (int s = 0; s < stages; ++s) {
      take_weight_passes(s);  // none but a list's wrong leading ones
      if (next[s] == actions[s].size()) continue;
      const PipelineAction& a = actions[s][next[s]];
      COURSE_CHECK(a.chunk >= 0 && a.chunk < virtual_stages, "stage ", s, "'s action ",
                   action_name(a), " names a chunk it does not hold");
      if (a.kind == Kind::kBackward) {
        COURSE_CHECK(forwarded[s].count({a.chunk, a.micro_batch}) > 0, "stage ", s, " runs ",
                     action_name(a), " before its forward");
      }
      const std::optional<StageMessage> input = action_input(a, s, stages, virtual_stages);
      if (input && arrived[s].count(*input) == 0) continue;  // idles this round
      if (input) arrived[s].erase(*input);
      if (a.kind == Kind::kForward) forwarded[s].insert({a.chunk, a.micro_batch});
      if (a.kind == Kind::kBackward) backwarded[s].insert({a.chunk, a.micro_batch});
      round[s].action = a;
      ++next[s];
      progress = true;
      if (const auto output = action_output(a, s, stages, virtual_stages)) {
        round[s].sends.push_back(*output);
        delivered.push_back({output->to % stages, *output});
      }
      take_weight_passes(s);
    }
    if (!progress) {
      std::ostringstream stuck;
      for (int s = 0; s < stages; ++s) {
        if (next[s] < actions[s].size()) {
          stuck << " stage " << s << " waits to run " << action_name(actions[s][next[s]]) << ";";
        }
      }
      COURSE_FAIL(
          "the pipeline's actions cannot all run: no neighbour ever sends what they "
          "need:",
          stuck.str());
    }
    for (const auto& [to, message] : delivered) {
      round[to].receives.push_back(message);
      arrived[to].insert(message);
    }
    for (int s = 0; s < stages; ++s) rounds[s].push_back(std::move(round[s]));
  }
  return rounds;
}

double timetable_bubble(const std::vector<std::vector<PipelineRound>>& rounds,
                        const std::vector<PassCosts>& costs) {
  const int stages = static_cast<int>(rounds.size());
  COURSE_CHECK(stages > 0 && costs.size() == rounds.size(), "timetable_bubble got ", costs.size(),
               " stages' pass costs for a timetable of ", stages);
  const auto cost = [](const PipelineAction& a, const PassCosts& c) {
    switch (a.kind) {
      case Kind::kForward:
        return c.forward;
      case Kind::kBackward:
        return c.backward;
      case Kind::kWeight:
        return c.weight;
    }
    return 0.0;
  };
  // When each stage enters the next round, and the compute it has done so far.
  std::vector<double> clock(stages, 0.0), compute(stages, 0.0), posted(stages), own_end(stages);
  for (size_t r = 0; r < rounds[0].size(); ++r) {
    for (int s = 0; s < stages; ++s) {
      const PipelineRound& round = rounds[s].at(r);
      const double action = round.action ? cost(*round.action, costs[s]) : 0.0;
      double weights = 0;
      for (const PipelineAction& w : round.weight_passes) weights += cost(w, costs[s]);
      compute[s] += action + weights;
      posted[s] = clock[s] + action;  // the round's messages leave here
      own_end[s] = posted[s] + weights;
    }
    for (int s = 0; s < stages; ++s) {
      clock[s] = own_end[s];
      for (const StageMessage& m : rounds[s][r].sends) {
        clock[s] = std::max(clock[s], posted[m.to % stages]);
      }
      for (const StageMessage& m : rounds[s][r].receives) {
        const int from = (m.gradient ? m.to + 1 : m.to - 1) % stages;
        clock[s] = std::max(clock[s], posted[from]);
      }
    }
  }
  const double step = *std::max_element(clock.begin(), clock.end());
  if (step <= 0) return 0;
  double bubble = 0;
  for (const double c : compute) bubble += (1 - c / step) / stages;
  return bubble;
}

}  // namespace course::parallel
