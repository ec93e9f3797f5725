// The study database (see study_storage.h).
#include "common/hpo/study_storage.h"

#include <chrono>
#include <map>

#include "common/core/error.h"

namespace course::hpo {
namespace {

// Every table, with "{id}" for the database's generated key; BIGINT and DOUBLE PRECISION mean
// the same in both (a seed is 64 bits, PostgreSQL's INTEGER and REAL are 32).
constexpr const char* kTables[] = {
    "CREATE TABLE IF NOT EXISTS studies(id {id}, name TEXT UNIQUE NOT NULL, direction TEXT NOT "
    "NULL, space TEXT NOT NULL, sampler TEXT NOT NULL, pruner TEXT NOT NULL, seed BIGINT NOT "
    "NULL, objective TEXT NOT NULL, created DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS trials(id {id}, study_id BIGINT NOT NULL REFERENCES studies(id), "
    "number BIGINT NOT NULL, state TEXT NOT NULL, value DOUBLE PRECISION, worker TEXT NOT NULL, "
    "started DOUBLE PRECISION NOT NULL, finished DOUBLE PRECISION, heartbeat DOUBLE PRECISION "
    "NOT NULL, UNIQUE(study_id, number))",
    "CREATE TABLE IF NOT EXISTS params(trial_id BIGINT NOT NULL REFERENCES trials(id), position "
    "BIGINT NOT NULL, value DOUBLE PRECISION NOT NULL, PRIMARY KEY(trial_id, position))",
    "CREATE TABLE IF NOT EXISTS intermediate(trial_id BIGINT NOT NULL REFERENCES trials(id), "
    "step BIGINT NOT NULL, value DOUBLE PRECISION, PRIMARY KEY(trial_id, step))",
    "CREATE TABLE IF NOT EXISTS rungs(trial_id BIGINT NOT NULL REFERENCES trials(id), rung "
    "BIGINT NOT NULL, value DOUBLE PRECISION, PRIMARY KEY(trial_id, rung))",
};

std::string with_id_column(std::string sql, const char* id_column) {
  const size_t id = sql.find("{id}");
  return id == std::string::npos ? sql : sql.replace(id, 4, id_column);
}

}  // namespace

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

StudyStorage::StudyStorage(const std::string& location, const StoreOptions& options)
    : options_(options), db_(open_sql_database(location, options)) {}

StoreOptions StudyStorage::reopening_options() const {
  StoreOptions reopening = options_;
  reopening.create = false;
  reopening.journal.reset();
  return reopening;
}

void StudyStorage::require_tables() {
  COURSE_CHECK(db_->has_table("studies"), "the study database ", db_->location(),
               " holds no studies (create one first: `hpo create`)");
}

StudyRecord StudyStorage::create_study(const StudyConfig& config) {
  COURSE_CHECK(!config.name.empty(), "a study needs a name");
  return db_->transaction([&] {
    for (const char* table : kTables) db_->run(with_id_column(table, db_->generated_id_column()));
    COURSE_CHECK(db_->run("SELECT 1 FROM studies WHERE name = ?", {config.name}).rows.empty(),
                 "study '", config.name, "' already exists");
    const SqlResult inserted = db_->run(
        "INSERT INTO studies(name, direction, space, sampler, pruner, seed, objective, created) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        {config.name, std::string(to_string(config.direction)), to_string(config.space),
         config.sampler, config.pruner, static_cast<int64_t>(config.seed), config.objective,
         now_seconds()});
    return StudyRecord{as_int(inserted.rows.at(0).at(0)), config};
  });
}

StudyRecord StudyStorage::load_study(const std::string& name) {
  require_tables();
  const SqlResult found = db_->run(
      "SELECT id, direction, space, sampler, pruner, seed, objective FROM studies WHERE name = ?",
      {name});
  COURSE_CHECK(!found.rows.empty(), "no study named '", name, "' in the database");
  const std::vector<SqlValue>& row = found.rows[0];
  StudyRecord record;
  record.id = as_int(row[0]);
  record.config.name = name;
  record.config.direction = parse_direction(as_text(row[1]));
  record.config.space = parse_search_space(as_text(row[2]));
  record.config.sampler = as_text(row[3]);
  record.config.pruner = as_text(row[4]);
  record.config.seed = static_cast<uint64_t>(as_int(row[5]));
  record.config.objective = as_text(row[6]);
  return record;
}

std::vector<std::string> StudyStorage::study_names() {
  require_tables();
  std::vector<std::string> names;
  for (const auto& row : db_->run("SELECT name FROM studies ORDER BY id").rows) {
    names.push_back(as_text(row[0]));
  }
  return names;
}

std::vector<Trial> StudyStorage::trials(int64_t study_id) {
  std::vector<Trial> trials;
  std::map<int64_t, size_t> index;
  const SqlResult rows = db_->run(
      "SELECT id, number, state, value, worker, started, finished FROM trials "
      "WHERE study_id = ? ORDER BY number",
      {study_id});
  for (const std::vector<SqlValue>& row : rows.rows) {
    Trial trial;
    trial.id = as_int(row[0]);
    trial.number = static_cast<int>(as_int(row[1]));
    trial.state = parse_trial_state(as_text(row[2]));
    trial.value = as_optional_double(row[3]);
    trial.worker = as_text(row[4]);
    trial.started = as_double(row[5]);
    trial.finished = as_optional_double(row[6]);
    index[trial.id] = trials.size();
    trials.push_back(std::move(trial));
  }
  const auto each_row = [&](const std::string& table, const std::string& key, auto&& store) {
    const std::string sql = "SELECT t.id, x." + key + ", x.value FROM " + table +
                            " x JOIN trials t ON t.id = x.trial_id WHERE t.study_id = ? ORDER BY "
                            "t.id, x." +
                            key;
    for (const std::vector<SqlValue>& row : db_->run(sql, {study_id}).rows) {
      const auto found = index.find(as_int(row[0]));
      if (found == index.end()) continue;  // a trial inserted since the first query
      store(trials[found->second], static_cast<int>(as_int(row[1])), as_double(row[2]));
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
  const SqlResult count = db_->run("SELECT COUNT(*) FROM trials WHERE study_id = ?", {study_id});
  Trial trial;
  trial.number = static_cast<int>(as_int(count.rows.at(0).at(0)));
  trial.params = params;
  trial.worker = worker;
  trial.started = now_seconds();
  const SqlResult inserted = db_->run(
      "INSERT INTO trials(study_id, number, state, worker, started, heartbeat) "
      "VALUES(?, ?, ?, ?, ?, ?) RETURNING id",
      {study_id, static_cast<int64_t>(trial.number), std::string(to_string(TrialState::kRunning)),
       worker, trial.started, trial.started});
  trial.id = as_int(inserted.rows.at(0).at(0));
  for (size_t i = 0; i < params.size(); ++i) {
    db_->run("INSERT INTO params(trial_id, position, value) VALUES(?, ?, ?)",
             {trial.id, static_cast<int64_t>(i), params[i]});
  }
  return trial;
}

void StudyStorage::add_intermediate(int64_t trial_id, int step, double value) {
  db_->run(
      "INSERT INTO intermediate(trial_id, step, value) VALUES(?, ?, ?) "
      "ON CONFLICT(trial_id, step) DO UPDATE SET value = excluded.value",
      {trial_id, static_cast<int64_t>(step), value});
}

void StudyStorage::add_rungs(int64_t trial_id, const std::map<int, double>& rungs) {
  for (const auto& [rung, value] : rungs) {
    db_->run(
        "INSERT INTO rungs(trial_id, rung, value) VALUES(?, ?, ?) "
        "ON CONFLICT(trial_id, rung) DO UPDATE SET value = excluded.value",
        {trial_id, static_cast<int64_t>(rung), value});
  }
}

bool StudyStorage::finish_trial(int64_t trial_id, TrialState state, std::optional<double> value) {
  const SqlResult updated = db_->run(
      "UPDATE trials SET state = ?, value = ?, finished = ? WHERE id = ? AND state = 'running'",
      {std::string(to_string(state)), value ? SqlValue(*value) : SqlValue(), now_seconds(),
       trial_id});
  return updated.changed == 1;
}

void StudyStorage::heartbeat(int64_t trial_id) {
  db_->run("UPDATE trials SET heartbeat = ? WHERE id = ? AND state = 'running'",
           {now_seconds(), trial_id});
}

int StudyStorage::fail_stale_trials(int64_t study_id, double grace_seconds) {
  const double now = now_seconds();
  return static_cast<int>(db_->run("UPDATE trials SET state = 'failed', finished = ? "
                                   "WHERE study_id = ? AND state = 'running' AND heartbeat < ?",
                                   {now, study_id, now - grace_seconds})
                              .changed);
}

}  // namespace course::hpo
