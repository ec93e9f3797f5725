// The lockstep timetable of a pipeline step.
#include "common/parallel/pipeline/pipeline_rounds.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "common/core/error.h"

namespace course::parallel {

namespace {

using Kind = PipelineAction::Kind;

}  // namespace

int sender_of(const StageMessage& message, int stages) {
  return (message.gradient ? message.to + 1 : message.to - 1) % stages;
}

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

double replayed_bubble(const std::vector<std::vector<PipelineRound>>& rounds,
                       const std::vector<std::vector<double>>& action_seconds,
                       const ReplayMachine& machine) {
  const int stages = static_cast<int>(rounds.size());
  COURSE_CHECK(stages > 0 && action_seconds.size() == rounds.size(), "a replay got ",
               action_seconds.size(), " stages' pass lengths for a timetable of ", stages);
  COURSE_CHECK(machine.message_seconds >= 0 && machine.cores >= 0,
               "a replay needs messages of 0 seconds or more and 0 or more cores, got ",
               machine.message_seconds, " s and ", machine.cores);
  // When each core is free again: only where stages share them.
  std::vector<double> core_free(machine.cores < stages ? machine.cores : 0, 0.0);
  const auto start_on_a_core = [&](double ready, double length) {
    if (core_free.empty() || length == 0) return ready;
    // The core freed last before `ready`, else the first to be free.
    auto core = core_free.begin();
    for (auto c = core_free.begin(); c != core_free.end(); ++c) {
      const bool fits = *c <= ready, core_fits = *core <= ready;
      if ((fits && (!core_fits || *c > *core)) || (!fits && !core_fits && *c < *core)) core = c;
    }
    const double start = std::max(ready, *core);
    *core = start + length;
    return start;
  };
  // The length of stage s's next action in its list.
  std::vector<size_t> next(stages, 0);
  const auto next_length = [&](int s) {
    COURSE_CHECK(next[s] < action_seconds[s].size(), "a replay got ", action_seconds[s].size(),
                 " pass lengths for stage ", s, ", whose timetable runs more actions");
    return action_seconds[s][next[s]++];
  };
  // When each stage enters the next round, and the compute it has done so far.
  std::vector<double> clock(stages, 0.0), compute(stages, 0.0), posted(stages), own_end(stages);
  std::vector<int> by_readiness(stages);
  for (size_t r = 0; r < rounds[0].size(); ++r) {
    for (int s = 0; s < stages; ++s) by_readiness[s] = s;
    std::stable_sort(by_readiness.begin(), by_readiness.end(),
                     [&](int a, int b) { return clock[a] < clock[b]; });
    for (const int s : by_readiness) {
      const PipelineRound& round = rounds[s].at(r);
      const double action = round.action ? next_length(s) : 0.0;
      double weights = 0;
      for (size_t w = 0; w < round.weight_passes.size(); ++w) weights += next_length(s);
      compute[s] += action + weights;
      posted[s] = start_on_a_core(clock[s], action + weights) + action;  // messages leave here
      own_end[s] = posted[s] + weights;
    }
    for (int s = 0; s < stages; ++s) {
      clock[s] = own_end[s];
      const auto exchanged_with = [&](int peer) {
        clock[s] = std::max(clock[s], std::max(posted[s], posted[peer]) + machine.message_seconds);
      };
      for (const StageMessage& m : rounds[s][r].sends) exchanged_with(m.to % stages);
      for (const StageMessage& m : rounds[s][r].receives) {
        exchanged_with(sender_of(m, stages));
      }
    }
  }
  const double step = *std::max_element(clock.begin(), clock.end());
  if (step <= 0) return 0;
  double bubble = 0;
  for (const double c : compute) bubble += (1 - c / step) / stages;
  return bubble;
}

double timetable_bubble(const std::vector<std::vector<PipelineRound>>& rounds,
                        const std::vector<PassCosts>& costs, const ReplayMachine& machine) {
  COURSE_CHECK(costs.size() == rounds.size(), "timetable_bubble got ", costs.size(),
               " stages' pass costs for a timetable of ", rounds.size());
  std::vector<std::vector<double>> action_seconds(rounds.size());
  for (size_t s = 0; s < rounds.size(); ++s) {
    const auto length = [&](const PipelineAction& a) {
      return a.kind == Kind::kForward    ? costs[s].forward
             : a.kind == Kind::kBackward ? costs[s].backward
                                         : costs[s].weight;
    };
    for (const PipelineRound& round : rounds[s]) {
      if (round.action) action_seconds[s].push_back(length(*round.action));
      for (const PipelineAction& w : round.weight_passes) action_seconds[s].push_back(length(w));
    }
  }
  return replayed_bubble(rounds, action_seconds, machine);
}

}  // namespace course::parallel
