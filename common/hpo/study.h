// A study as one worker process drives it: ask for a trial, report its value at each step
// (and learn whether to prune it), tell its end. Each call is one transaction on the shared
// storage that no other worker of the study interleaves with, so the sampler sees every trial
// the other workers started (the constant liar's running trials included) and two workers never
// get the same trial number.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/hpo/pruner.h"
#include "common/hpo/sampler.h"
#include "common/hpo/study_storage.h"

namespace course::hpo {

struct HeartbeatOptions {
  double interval_seconds = 10.0;  // how often a running trial's worker says it is alive
  double grace_seconds = 60.0;     // silence after which a running trial is marked failed
};

class Study {
 public:
  // `rules`: the day-3 tool passes the trainee's (rules.h); everything else the reference ones.
  Study(StudyStorage& storage, const std::string& name, HeartbeatOptions heartbeat = {},
        const SearchRules& rules = {});

  const StudyConfig& config() const { return record_.config; }
  std::vector<Trial> trials() { return storage_.trials(record_.id); }

  // A new running trial with the sampler's point, or nothing when the sampler is exhausted.
  std::optional<Trial> ask(const std::string& worker);
  // Records the trial's value at `step`; true when the pruner says to stop it.
  bool report(Trial& trial, int step, double value);
  void tell(const Trial& trial, TrialState state, std::optional<double> value = std::nullopt);
  // Marks trials whose workers stopped beating as failed; returns how many.
  int fail_stale_trials();

 private:
  StudyStorage& storage_;
  StudyRecord record_;
  HeartbeatOptions heartbeat_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<Pruner> pruner_;
};

// Refreshes a running trial's heartbeat from a thread of its own (with its own connection to the
// storage's database) while the objective runs; stops as soon as it is destroyed.
class HeartbeatThread {
 public:
  HeartbeatThread(const StudyStorage& storage, int64_t trial_id, double interval_seconds);
  ~HeartbeatThread();
  HeartbeatThread(const HeartbeatThread&) = delete;
  HeartbeatThread& operator=(const HeartbeatThread&) = delete;

 private:
  bool stop_ = false;  // set by the destructor, which wakes the thread at once
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace course::hpo
