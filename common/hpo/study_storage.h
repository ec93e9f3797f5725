// Studies and their trials in one SQLite file that many worker processes share.
//
// Tables: studies (name, direction, search space, sampler, pruner, seed), trials (number,
// state, final value, worker, start/finish/heartbeat times), params, intermediate values and
// the rungs successive halving recorded. Each operation is one transaction; a running trial's
// worker refreshes its heartbeat, and a running trial whose heartbeat is older than the grace
// period is marked failed by the next worker that looks (its worker was killed).
//
// Shared file systems: see day3_data/README.md ("Where the study lives"). In short, WAL mode
// needs every process on one host (its index is shared memory); several hosts need the
// rollback journal and a file system with working POSIX locks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/hpo/search_space.h"
#include "common/hpo/sqlite_database.h"
#include "common/hpo/trial.h"

namespace course::hpo {

struct StudyConfig {
  std::string name;
  Direction direction = Direction::kMinimize;
  SearchSpace space;
  std::string sampler = "tpe";
  std::string pruner = "none";
  uint64_t seed = 0;
  // What a worker evaluates: "rosenbrock", "himmelblau", or "lab <fixed lab flags>".
  std::string objective;
};

struct StudyRecord {
  int64_t id = 0;
  StudyConfig config;
};

class StudyStorage {
 public:
  // `mode` switches the file's journal (kept in the file: give it when creating a study).
  explicit StudyStorage(const std::string& path, std::optional<JournalMode> mode = std::nullopt,
                        int busy_timeout_ms = 600000);

  // Creates the study; an existing name is one course::Error.
  StudyRecord create_study(const StudyConfig& config);
  StudyRecord load_study(const std::string& name);
  std::vector<std::string> study_names();

  std::vector<Trial> trials(int64_t study_id);
  Trial insert_trial(int64_t study_id, const ParamValues& params, const std::string& worker);
  void add_intermediate(int64_t trial_id, int step, double value);
  void add_rungs(int64_t trial_id, const std::map<int, double>& rungs);
  // False when the trial was no longer running (another worker marked it failed).
  bool finish_trial(int64_t trial_id, TrialState state, std::optional<double> value);
  void heartbeat(int64_t trial_id);
  // Marks running trials whose heartbeat is older than grace_seconds as failed; returns how many.
  int fail_stale_trials(int64_t study_id, double grace_seconds);

  SqliteDatabase& database() { return db_; }

 private:
  SqliteDatabase db_;
};

// Seconds since the epoch, the storage's clock.
double now_seconds();

}  // namespace course::hpo
