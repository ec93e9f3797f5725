// A worker's view of a study (see study.h).
#include "common/hpo/study.h"

#include <chrono>
#include <cstdio>

#include "common/core/error.h"

namespace course::hpo {

Study::Study(StudyStorage& storage, const std::string& name, HeartbeatOptions heartbeat,
             const SearchRules& rules)
    : storage_(storage),
      record_(storage.load_study(name)),
      heartbeat_(heartbeat),
      sampler_(make_sampler(record_.config.sampler, rules)),
      pruner_(make_pruner(record_.config.pruner, name, rules)) {}

int Study::fail_stale_trials() {
  return storage_.study_transaction(
      record_.id, [&] { return storage_.fail_stale_trials(record_.id, heartbeat_.grace_seconds); });
}

std::optional<Trial> Study::ask(const std::string& worker) {
  return storage_.study_transaction(record_.id, [&]() -> std::optional<Trial> {
    storage_.fail_stale_trials(record_.id, heartbeat_.grace_seconds);
    const std::vector<Trial> trials = storage_.trials(record_.id);
    const int number = static_cast<int>(trials.size());
    std::mt19937_64 rng = trial_rng(record_.config.seed, number);
    const SamplingContext context{record_.config.space, record_.config.direction, trials, number,
                                  record_.config.seed};
    const std::optional<ParamValues> point = sampler_->sample(context, rng);
    if (!point) return std::nullopt;
    return storage_.insert_trial(record_.id, *point, worker);
  });
}

bool Study::report(Trial& trial, int step, double value) {
  trial.intermediate[step] = value;
  return storage_.study_transaction(record_.id, [&] {
    storage_.add_intermediate(trial.id, step, value);
    std::vector<Trial> others = storage_.trials(record_.id);
    std::erase_if(others, [&](const Trial& other) { return other.id == trial.id; });
    const PruneDecision decision = pruner_->decide(trial, others, record_.config.direction);
    storage_.add_rungs(trial.id, decision.new_rungs);
    trial.rungs.insert(decision.new_rungs.begin(), decision.new_rungs.end());
    return decision.prune;
  });
}

void Study::tell(const Trial& trial, TrialState state, std::optional<double> value) {
  COURSE_CHECK(state != TrialState::kComplete || value, "a complete trial needs a value");
  const bool recorded = storage_.study_transaction(
      record_.id, [&] { return storage_.finish_trial(trial.id, state, value); });
  if (!recorded) {
    std::fprintf(stderr,
                 "trial %d had been marked failed (no heartbeat for %.0f s); its end is not "
                 "recorded\n",
                 trial.number, heartbeat_.grace_seconds);
  }
}

HeartbeatThread::HeartbeatThread(const StudyStorage& storage, int64_t trial_id,
                                 double interval_seconds)
    : thread_([this, location = storage.location(), options = storage.reopening_options(), trial_id,
               interval_seconds] {
        const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(interval_seconds));
        // Opened at the first beat (the trial started with a fresh heartbeat): a trial shorter
        // than the interval needs no connection of its own.
        std::optional<StudyStorage> connection;
        std::unique_lock lock(mutex_);
        try {
          while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
            if (!connection) connection.emplace(location, options);
            connection->heartbeat(trial_id);
          }
        } catch (const std::exception& error) {
          std::fprintf(stderr, "heartbeat of trial %lld stopped: %s\n",
                       static_cast<long long>(trial_id), error.what());
        }
      }) {}

HeartbeatThread::~HeartbeatThread() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

}  // namespace course::hpo
