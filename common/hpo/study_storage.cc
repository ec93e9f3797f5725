// The study database (see study_storage.h).
#include "common/hpo/study_storage.h"

#include <chrono>
#include <map>

#include "common/core/error.h"

namespace course::hpo {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS studies(
  id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, direction TEXT NOT NULL,
  space TEXT NOT NULL, sampler TEXT NOT NULL, pruner TEXT NOT NULL, seed INTEGER NOT NULL,
  objective TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS trials(
  id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL REFERENCES studies(id),
  number INTEGER NOT NULL, state TEXT NOT NULL, value REAL, worker TEXT NOT NULL,
  started REAL NOT NULL, finished REAL, heartbeat REAL NOT NULL, UNIQUE(study_id, number));
CREATE TABLE IF NOT EXISTS params(
  trial_id INTEGER NOT NULL REFERENCES trials(id), position INTEGER NOT NULL,
  value REAL NOT NULL, PRIMARY KEY(trial_id, position));
CREATE TABLE IF NOT EXISTS intermediate(
  trial_id INTEGER NOT NULL REFERENCES trials(id), step INTEGER NOT NULL, value REAL,
  PRIMARY KEY(trial_id, step));
CREATE TABLE IF NOT EXISTS rungs(
  trial_id INTEGER NOT NULL REFERENCES trials(id), rung INTEGER NOT NULL, value REAL,
  PRIMARY KEY(trial_id, rung));
)sql";

}  // namespace

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

StudyStorage::StudyStorage(const std::string& path, std::optional<JournalMode> mode,
                           int busy_timeout_ms)
    : db_(path, mode, busy_timeout_ms) {
  db_.write_transaction([&] { db_.exec(kSchema); });
}

StudyRecord StudyStorage::create_study(const StudyConfig& config) {
  COURSE_CHECK(!config.name.empty(), "a study needs a name");
  return db_.write_transaction([&] {
    auto exists = db_.prepare("SELECT 1 FROM studies WHERE name = ?");
    COURSE_CHECK(!exists.bind(1, config.name).step(), "study '", config.name, "' already exists");
    db_.prepare(
           "INSERT INTO studies(name, direction, space, sampler, pruner, seed, objective, "
           "created) VALUES(?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(1, config.name)
        .bind(2, std::string(to_string(config.direction)))
        .bind(3, to_string(config.space))
        .bind(4, config.sampler)
        .bind(5, config.pruner)
        .bind(6, static_cast<int64_t>(config.seed))
        .bind(7, config.objective)
        .bind(8, now_seconds())
        .run();
    return StudyRecord{db_.last_insert_id(), config};
  });
}

StudyRecord StudyStorage::load_study(const std::string& name) {
  auto query = db_.prepare(
      "SELECT id, direction, space, sampler, pruner, seed, objective FROM studies WHERE name = ?");
  COURSE_CHECK(query.bind(1, name).step(), "no study named '", name, "' in the database");
  StudyRecord record;
  record.id = query.column_int(0);
  record.config.name = name;
  record.config.direction = parse_direction(query.column_text(1));
  record.config.space = parse_search_space(query.column_text(2));
  record.config.sampler = query.column_text(3);
  record.config.pruner = query.column_text(4);
  record.config.seed = static_cast<uint64_t>(query.column_int(5));
  record.config.objective = query.column_text(6);
  return record;
}

std::vector<std::string> StudyStorage::study_names() {
  std::vector<std::string> names;
  auto query = db_.prepare("SELECT name FROM studies ORDER BY id");
  while (query.step()) names.push_back(query.column_text(0));
  return names;
}

std::vector<Trial> StudyStorage::trials(int64_t study_id) {
  std::vector<Trial> trials;
  std::map<int64_t, size_t> index;
  auto rows = db_.prepare(
      "SELECT id, number, state, value, worker, started, finished FROM trials "
      "WHERE study_id = ? ORDER BY number");
  rows.bind(1, study_id);
  while (rows.step()) {
    Trial trial;
    trial.id = rows.column_int(0);
    trial.number = static_cast<int>(rows.column_int(1));
    trial.state = parse_trial_state(rows.column_text(2));
    trial.value = rows.column_optional(3);
    trial.worker = rows.column_text(4);
    trial.started = rows.column_double(5);
    trial.finished = rows.column_optional(6);
    index[trial.id] = trials.size();
    trials.push_back(std::move(trial));
  }
  const auto each_row = [&](const char* table, const char* column, auto&& store) {
    auto query =
        db_.prepare(std::string("SELECT t.id, x.") + column + ", x.value FROM " + table +
                    " x JOIN trials t ON t.id = x.trial_id WHERE t.study_id = ? ORDER BY " +
                    "t.id, x." + column);
    query.bind(1, study_id);
    while (query.step()) {
      const auto found = index.find(query.column_int(0));
      if (found == index.end()) continue;  // a trial inserted since the first query
      store(trials[found->second], static_cast<int>(query.column_int(1)), query.column_double(2));
    }
  };
  each_row("params", "position",
           [](Trial& trial, int, double value) { trial.params.push_back(value); });
  each_row("intermediate", "step",
           [](Trial& trial, int step, double value) { trial.intermediate[step] = value; });
  each_row("rungs", "rung",
           [](Trial& trial, int rung, double value) { trial.rungs[rung] = value; });
  return trials;
}

Trial StudyStorage::insert_trial(int64_t study_id, const ParamValues& params,
                                 const std::string& worker) {
  auto count = db_.prepare("SELECT COUNT(*) FROM trials WHERE study_id = ?");
  count.bind(1, study_id).step();
  Trial trial;
  trial.number = static_cast<int>(count.column_int(0));
  trial.params = params;
  trial.worker = worker;
  const double now = now_seconds();
  trial.started = now;
  db_.prepare(
         "INSERT INTO trials(study_id, number, state, worker, started, heartbeat) "
         "VALUES(?, ?, ?, ?, ?, ?)")
      .bind(1, study_id)
      .bind(2, static_cast<int64_t>(trial.number))
      .bind(3, std::string(to_string(TrialState::kRunning)))
      .bind(4, worker)
      .bind(5, now)
      .bind(6, now)
      .run();
  trial.id = db_.last_insert_id();
  auto insert = db_.prepare("INSERT INTO params(trial_id, position, value) VALUES(?, ?, ?)");
  for (size_t i = 0; i < params.size(); ++i) {
    insert.bind(1, trial.id).bind(2, static_cast<int64_t>(i)).bind(3, params[i]).run();
    insert.reset();
  }
  return trial;
}

void StudyStorage::add_intermediate(int64_t trial_id, int step, double value) {
  db_.prepare("INSERT OR REPLACE INTO intermediate(trial_id, step, value) VALUES(?, ?, ?)")
      .bind(1, trial_id)
      .bind(2, static_cast<int64_t>(step))
      .bind(3, value)
      .run();
}

void StudyStorage::add_rungs(int64_t trial_id, const std::map<int, double>& rungs) {
  auto insert = db_.prepare("INSERT OR REPLACE INTO rungs(trial_id, rung, value) VALUES(?, ?, ?)");
  for (const auto& [rung, value] : rungs) {
    insert.bind(1, trial_id).bind(2, static_cast<int64_t>(rung)).bind(3, value).run();
    insert.reset();
  }
}

bool StudyStorage::finish_trial(int64_t trial_id, TrialState state, std::optional<double> value) {
  auto update = db_.prepare(
      "UPDATE trials SET state = ?, value = ?, finished = ? WHERE id = ? AND state = 'running'");
  update.bind(1, std::string(to_string(state)));
  if (value) {
    update.bind(2, *value);
  } else {
    update.bind_null(2);
  }
  update.bind(3, now_seconds()).bind(4, trial_id).run();
  return db_.changes() == 1;
}

void StudyStorage::heartbeat(int64_t trial_id) {
  db_.prepare("UPDATE trials SET heartbeat = ? WHERE id = ? AND state = 'running'")
      .bind(1, now_seconds())
      .bind(2, trial_id)
      .run();
}

int StudyStorage::fail_stale_trials(int64_t study_id, double grace_seconds) {
  auto update = db_.prepare(
      "UPDATE trials SET state = 'failed', finished = ? "
      "WHERE study_id = ? AND state = 'running' AND heartbeat < ?");
  const double now = now_seconds();
  update.bind(1, now).bind(2, study_id).bind(3, now - grace_seconds).run();
  return db_.changes();
}

}  // namespace course::hpo
