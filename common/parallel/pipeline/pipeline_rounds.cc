// The lockstep timetable of a pipeline step.
#include "common/parallel/pipeline/pipeline_rounds.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <string>

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

namespace {

// The timetable under construction: which action each stage runs next, the messages that have
// reached it, and the passes it has done (to refuse a backward before its forward).
class Lockstep {
 public:
  Lockstep(const std::vector<std::vector<PipelineAction>>& actions, int virtual_stages)
      : actions_(actions),
        stages_(static_cast<int>(actions.size())),
        virtual_stages_(virtual_stages),
        next_(stages_, 0),
        arrived_(stages_),
        forwarded_(stages_),
        backwarded_(stages_) {}

  bool done() const {
    for (int s = 0; s < stages_; ++s) {
      if (next_[s] < actions_[s].size()) return false;
    }
    return true;
  }

  // One round: every stage runs its next action if its input has arrived; the round's messages
  // are usable from the next round on.
  std::vector<PipelineRound> next_round() {
    std::vector<PipelineRound> round(stages_);
    std::vector<std::pair<int, StageMessage>> delivered;
    bool progress = false;
    for (int s = 0; s < stages_; ++s) {
      progress |= take_weight_passes(s, round[s]);  // none but a list's wrong leading ones
      progress |= run_next_action(s, round[s], delivered);
    }
    if (!progress) {
      COURSE_FAIL("the pipeline's actions cannot all run: no neighbour ever sends what they need:",
                  waiting());
    }
    for (const auto& [to, message] : delivered) {
      round[to].receives.push_back(message);
      arrived_[to].insert(message);
    }
    return round;
  }

 private:
  // The weight passes that follow in stage s's list join its round (after its action).
  bool take_weight_passes(int s, PipelineRound& round) {
    bool took = false;
    while (next_[s] < actions_[s].size() && actions_[s][next_[s]].kind == Kind::kWeight) {
      const PipelineAction& w = actions_[s][next_[s]++];
      COURSE_CHECK(w.chunk >= 0 && w.chunk < virtual_stages_ &&
                       backwarded_[s].count({w.chunk, w.micro_batch}) > 0,
                   "stage ", s, " runs ", action_name(w), " before its backward");
      round.weight_passes.push_back(w);
      took = true;
    }
    return took;
  }

  bool run_next_action(int s, PipelineRound& round,
                       std::vector<std::pair<int, StageMessage>>& delivered) {
    if (next_[s] == actions_[s].size()) return false;
    const PipelineAction& a = actions_[s][next_[s]];
    COURSE_CHECK(a.chunk >= 0 && a.chunk < virtual_stages_, "stage ", s, "'s action ",
                 action_name(a), " names a chunk it does not hold");
    if (a.kind == Kind::kBackward) {
      COURSE_CHECK(forwarded_[s].count({a.chunk, a.micro_batch}) > 0, "stage ", s, " runs ",
                   action_name(a), " before its forward");
    }
    const std::optional<StageMessage> input = action_input(a, s, stages_, virtual_stages_);
    if (input && arrived_[s].count(*input) == 0) return false;  // idles this round
    if (input) arrived_[s].erase(*input);
    if (a.kind == Kind::kForward) forwarded_[s].insert({a.chunk, a.micro_batch});
    if (a.kind == Kind::kBackward) backwarded_[s].insert({a.chunk, a.micro_batch});
    round.action = a;
    ++next_[s];
    if (const auto output = action_output(a, s, stages_, virtual_stages_)) {
      round.sends.push_back(*output);
      delivered.push_back({output->to % stages_, *output});
    }
    take_weight_passes(s, round);
    return true;
  }

  std::string waiting() const {
    std::ostringstream stuck;
    for (int s = 0; s < stages_; ++s) {
      if (next_[s] < actions_[s].size()) {
        stuck << " stage " << s << " waits to run " << action_name(actions_[s][next_[s]]) << ";";
      }
    }
    return stuck.str();
  }

  const std::vector<std::vector<PipelineAction>>& actions_;
  const int stages_, virtual_stages_;
  std::vector<size_t> next_;
  std::vector<std::set<StageMessage>> arrived_;
  // (chunk, micro-batch) whose forward, whose backward is done
  std::vector<std::set<std::pair<int, int>>> forwarded_, backwarded_;
};

// A replay's cores, where stages share them: when each is free again (none: every stage has its
// own device).
class SharedCores {
 public:
  SharedCores(int cores, int stages) : free_at_(cores < stages ? cores : 0, 0.0) {}

  // When work of `length` seconds, ready at `ready`, starts: on the core freed last before
  // `ready`, else the first to be free.
  double start(double ready, double length) {
    if (free_at_.empty() || length == 0) return ready;
    auto core = free_at_.begin();
    for (auto c = free_at_.begin(); c != free_at_.end(); ++c) {
      const bool fits = *c <= ready, core_fits = *core <= ready;
      if ((fits && (!core_fits || *c > *core)) || (!fits && !core_fits && *c < *core)) core = c;
    }
    const double begins = std::max(ready, *core);
    *core = begins + length;
    return begins;
  }

 private:
  std::vector<double> free_at_;
};

// The stages' clocks through a replay of the timetable, round by round.
class Replay {
 public:
  Replay(const std::vector<std::vector<PipelineRound>>& rounds,
         const std::vector<std::vector<double>>& action_seconds, const ReplayMachine& machine)
      : rounds_(rounds),
        action_seconds_(action_seconds),
        machine_(machine),
        stages_(static_cast<int>(rounds.size())),
        cores_(machine.cores, stages_),
        next_(stages_, 0),
        clock_(stages_, 0.0),
        compute_(stages_, 0.0),
        posted_(stages_),
        own_end_(stages_) {}

  // Each stage's share of the step spent idle, averaged over the stages.
  double bubble() {
    for (size_t r = 0; r < rounds_[0].size(); ++r) {
      compute_round(r);
      exchange_round(r);
    }
    const double step = *std::max_element(clock_.begin(), clock_.end());
    if (step <= 0) return 0;
    double idle = 0;
    for (const double c : compute_) idle += (1 - c / step) / stages_;
    return idle;
  }

 private:
  // The length of stage s's next action in its list.
  double next_length(int s) {
    COURSE_CHECK(next_[s] < action_seconds_[s].size(), "a replay got ", action_seconds_[s].size(),
                 " pass lengths for stage ", s, ", whose timetable runs more actions");
    return action_seconds_[s][next_[s]++];
  }

  // The stages that entered the round first take the shared cores first.
  void compute_round(size_t r) {
    std::vector<int> by_readiness(stages_);
    for (int s = 0; s < stages_; ++s) by_readiness[s] = s;
    std::stable_sort(by_readiness.begin(), by_readiness.end(),
                     [&](int a, int b) { return clock_[a] < clock_[b]; });
    for (const int s : by_readiness) {
      const PipelineRound& round = rounds_[s].at(r);
      const double action = round.action ? next_length(s) : 0.0;
      double weights = 0;
      for (size_t w = 0; w < round.weight_passes.size(); ++w) weights += next_length(s);
      compute_[s] += action + weights;
      posted_[s] = cores_.start(clock_[s], action + weights) + action;  // messages leave here
      own_end_[s] = posted_[s] + weights;
    }
  }

  // A stage enters the next round when its own work is done and its messages have crossed.
  void exchange_round(size_t r) {
    for (int s = 0; s < stages_; ++s) {
      clock_[s] = own_end_[s];
      const auto exchanged_with = [&](int peer) {
        clock_[s] =
            std::max(clock_[s], std::max(posted_[s], posted_[peer]) + machine_.message_seconds);
      };
      for (const StageMessage& m : rounds_[s][r].sends) exchanged_with(m.to % stages_);
      for (const StageMessage& m : rounds_[s][r].receives) exchanged_with(sender_of(m, stages_));
    }
  }

  const std::vector<std::vector<PipelineRound>>& rounds_;
  const std::vector<std::vector<double>>& action_seconds_;
  const ReplayMachine machine_;
  const int stages_;
  SharedCores cores_;
  std::vector<size_t> next_;
  // When each stage enters the next round, the compute it has done so far, when its round's
  // messages leave and when its own work in the round ends.
  std::vector<double> clock_, compute_, posted_, own_end_;
};

}  // namespace

std::vector<std::vector<PipelineRound>> pipeline_rounds(
    const std::vector<std::vector<PipelineAction>>& actions, int virtual_stages) {
  const int stages = static_cast<int>(actions.size());
  COURSE_CHECK(stages >= 1 && virtual_stages >= 1, "a pipeline of ", stages, " stages and ",
               virtual_stages, " chunks per stage");
  std::vector<std::vector<PipelineRound>> rounds(stages);
  Lockstep lockstep(actions, virtual_stages);
  while (!lockstep.done()) {
    std::vector<PipelineRound> round = lockstep.next_round();
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
  return Replay(rounds, action_seconds, machine).bubble();
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
