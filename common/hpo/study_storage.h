// Studies and their trials in one database that many worker processes share: a SQLite file, or
// a PostgreSQL server for workers on several nodes (sql_database.h; the location chooses).
//
// Tables (made by the first create_study): studies (name, direction, search space, sampler, pruner,
// seed), trials (number, state, final value, worker, start/finish/heartbeat times), params,
// intermediate values and the rungs successive halving recorded. Each operation is one transaction;
// a running trial's worker refreshes its heartbeat, and a running trial whose heartbeat is older
// than the grace period is marked failed by the next worker that looks (its worker was killed).
//
// Where it lives: see day3_data/README.md ("Where the study lives"). In short, SQLite's WAL mode
// needs every process on one host (its index is shared memory); several hosts need the rollback
// journal and a file system with working POSIX locks, or a PostgreSQL server.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/hpo/search_space.h"
#include "common/hpo/sql_database.h"
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
  // `location`: a SQLite file's path or a postgresql:// URL (sql_database.h).
  explicit StudyStorage(const std::string& location, const StoreOptions& options = {});

  // Creates the study (and the tables, the first time); an existing name is one course::Error.
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

  // Runs body as one transaction that no other worker of the study interleaves with.
  template <class Body>
  auto study_transaction(int64_t study_id, Body&& body) {
    return db_->transaction([&] {
      db_->lock_row("studies", study_id);
      return body();
    });
  }

  const std::string& location() const { return db_->location(); }
  // How another connection opens the same store (a heartbeat's).
  StoreOptions reopening_options() const;

 private:
  void require_tables();

  StoreOptions options_;
  std::unique_ptr<SqlDatabase> db_;
};

// Seconds since the epoch, the storage's clock.
double now_seconds();

}  // namespace course::hpo
