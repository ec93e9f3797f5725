// `bazel run //day3_data:hpo -- <command>`: hyper-parameter studies that many workers share
// (see day3_data/README.md, "Hyper-parameter optimisation").
//   create   a study in a SQLite file or on a PostgreSQL server (--db postgresql://...): its
//            space, objective, sampler and pruner
//   worker   runs trials of a study until --trials are done (any number of workers at once)
//   status   the study's trials by state and its best trial (--trials: every trial)
//   best     the best trial's parameters as flags
//   plot     history, slice and intermediate-value plots (PNG) with the CSV files behind them
//   export   the study as Optuna's journal (--optuna FILE): optuna.load_study and
//            optuna-dashboard open it
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "common/core/error.h"
#include "common/core/exercise.h"
#include "common/hpo/objectives.h"
#include "common/hpo/optuna_journal.h"
#include "common/hpo/study.h"
#include "common/hpo/study_plots.h"
#include "common/hpo/study_report.h"
#include "common/train/lab_flags.h"
#include "common/train/lab_main.h"
#include "common/train/stop_signal.h"
#include "day3_data/exercises.h"
#include "day3_data/hpo_tool/hpo_objective.h"

namespace {

namespace hpo = course::hpo;

struct CreateFlags {
  std::string space, function, lab, direction, sampler = "tpe", pruner = "none";
  std::string journal;  // SQLite's: "wal" (the default) or "delete"
  uint64_t seed = 0;
};

struct WorkerFlags {
  int trials = 10;
  double heartbeat = 10, grace = 60;
};

std::string worker_name() {
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  std::string name = std::string(host) + ":" + std::to_string(getpid());
  if (const char* task = std::getenv("SLURM_ARRAY_TASK_ID")) name += " task " + std::string(task);
  return name;
}

// A SQLite file's folder, made as a login node's first `create` needs it (studies/lab.db).
void make_database_folder(const std::string& path) {
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!folder.empty()) std::filesystem::create_directories(folder, error);
  COURSE_CHECK(!error, "cannot make the study database's folder ", folder.string(), ": ",
               error.message());
}

void create(const std::string& db, const std::string& name, const CreateFlags& f) {
  COURSE_CHECK(f.function.empty() != f.lab.empty(),
               "create: give either --function or --lab (not both)");
  hpo::StudyConfig config;
  config.name = name;
  config.sampler = f.sampler;
  config.pruner = f.pruner;
  config.seed = f.seed;
  config.objective = f.function.empty() ? "lab " + f.lab : f.function;
  config.direction = hpo::parse_direction(
      f.direction.empty() ? (f.function.empty() ? "maximize" : "minimize") : f.direction);
  COURSE_CHECK(!f.space.empty() || !f.function.empty(),
               "create: --lab needs --space (parameters named after the lab's flags)");
  config.space =
      hpo::parse_search_space(f.space.empty() ? hpo::synthetic_space(f.function) : f.space);
  hpo::make_sampler(config.sampler);
  hpo::make_pruner(config.pruner, name);
  day3::check_objective(config);
  const bool server = hpo::is_server_location(db);
  COURSE_CHECK(!server || f.journal.empty(),
               "create: --journal is a SQLite file's; a PostgreSQL study has none");
  if (!server) make_database_folder(db);
  hpo::StudyStorage storage(
      db, {.create = true,
           .journal = f.journal == "delete" ? hpo::JournalMode::kDelete : hpo::JournalMode::kWal});
  storage.create_study(config);
  std::printf("%s", hpo::status_text(config, {}).c_str());
}

void work(const std::string& db, const std::string& name, const WorkerFlags& f) {
  COURSE_CHECK(f.heartbeat > 0 && f.grace > 2 * f.heartbeat,
               "worker: --grace must be more than twice --heartbeat");
  // A server that goes away is waited for as long as a trial's silence is.
  hpo::StudyStorage storage(db, {.reconnect_seconds = f.grace});
  hpo::Study study(storage, name, {f.heartbeat, f.grace}, day3::search_rules());
  const std::string me = worker_name();
  for (int done = 0; done < f.trials; ++done) {
    if (course::train::stop_signal()) {
      throw course::train::PreemptedError("stopped by a signal between trials");
    }
    std::optional<hpo::Trial> trial = study.ask(me);
    if (!trial) {
      std::printf("the sampler has no point left: the study is done\n");
      return;
    }
    hpo::HeartbeatThread beat(storage, trial->id, f.heartbeat);
    std::printf("trial %d: %s\n", trial->number,
                hpo::trial_flags(study.config().space, *trial).c_str());
    std::fflush(stdout);
    try {
      const day3::TrialOutcome outcome = day3::evaluate_trial(study, *trial);
      study.tell(*trial, outcome.state, outcome.value);
      std::printf("trial %d %s%s\n", trial->number, hpo::to_string(outcome.state),
                  outcome.value ? (": " + std::to_string(*outcome.value)).c_str() : "");
    } catch (const course::Error& error) {
      study.tell(*trial, hpo::TrialState::kFail);
      // A Slurm stop or an unwritten exercise ends the worker; anything else (a diverging
      // learning rate) fails this trial alone.
      if (dynamic_cast<const course::train::PreemptedError*>(&error) ||
          dynamic_cast<const course::ExerciseNotDone*>(&error)) {
        throw;
      }
      std::printf("trial %d failed: %s\n", trial->number, error.what());
    }
    std::fflush(stdout);
  }
}

// `create`'s flags: the search space or objective, the direction, sampler, pruner and storage.
void add_create_flags(CLI::App* command, CreateFlags& flags) {
  command->add_option("--space", flags.space,
                      "name=float:low:high[:log];name=int:low:high[:log];"
                      "name=cat:a,b,... (for --lab: names of the lab's flags)");
  command->add_option("--function", flags.function, "a synthetic objective of x and y, minimised")
      ->check(CLI::IsMember({"rosenbrock", "himmelblau"}));
  command->add_option("--lab", flags.lab,
                      "the day-3 lab's fixed flags; the objective is its test accuracy "
                      "after each epoch, maximised (e.g. \"--epochs 4 --train-subset "
                      "6000\")");
  command->add_option("--direction", flags.direction, "minimize or maximize")
      ->check(CLI::IsMember({"minimize", "maximize"}));
  command->add_option("--sampler", flags.sampler, "random, grid[:K], tpe[:univariate,noliar]")
      ->capture_default_str();
  command
      ->add_option("--pruner", flags.pruner, "none, median, sh, hyperband, asha [:key=value,...]")
      ->capture_default_str();
  command->add_option("--seed", flags.seed, "the samplers' seed")->capture_default_str();
  command
      ->add_option("--journal", flags.journal,
                   "a SQLite file's journal: wal (the default), workers on one host; delete: "
                   "workers on several hosts sharing a file system with POSIX locks")
      ->check(CLI::IsMember({"wal", "delete"}));
}

// `worker`'s flags: how many trials, and the heartbeat that tells a dead worker's trial.
void add_worker_flags(CLI::App* command, WorkerFlags& flags) {
  command->add_option("--trials", flags.trials, "trials this worker runs")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--heartbeat", flags.heartbeat, "seconds between a running trial's heartbeats")
      ->capture_default_str();
  command
      ->add_option("--grace", flags.grace,
                   "seconds without heartbeat after which a trial is failed")
      ->capture_default_str();
}

// The commands that read an existing study, and their flags.
struct ReadingCommands {
  CLI::App *status, *best, *plot, *export_;
  bool list_trials = false;
  std::string out = ".", journal;
};

void add_reading_commands(CLI::App& app, const std::function<void(CLI::App*)>& common,
                          ReadingCommands& c) {
  c.status = app.add_subcommand("status", "the study's state");
  c.status->add_flag("--trials", c.list_trials, "list every trial");
  c.best = app.add_subcommand("best", "the best trial's flags");
  c.plot = app.add_subcommand("plot", "PNG plots and CSV files of the study");
  c.plot->add_option("--out", c.out, "the folder to write them to")->capture_default_str();
  c.export_ = app.add_subcommand("export", "the study in another tool's format");
  c.export_
      ->add_option("--optuna", c.journal,
                   "Optuna's journal file to write (JournalStorage with a JournalFileBackend)")
      ->required();
  for (CLI::App* command : {c.status, c.best, c.plot, c.export_}) common(command);
}

void read_study(const std::string& db, const std::string& name, const ReadingCommands& c) {
  hpo::StudyStorage storage(db);
  const hpo::StudyRecord record = storage.load_study(name);
  const std::vector<hpo::Trial> trials = storage.trials(record.id);
  if (c.status->parsed()) {
    std::printf("%s", hpo::status_text(record.config, trials).c_str());
    if (c.list_trials) std::printf("%s", hpo::trials_table(record.config, trials).c_str());
  } else if (c.export_->parsed()) {
    hpo::write_optuna_journal(c.journal, record.config, trials);
    std::printf("wrote %s: study %s, %zu trials, for Optuna's JournalStorage\n", c.journal.c_str(),
                name.c_str(), trials.size());
  } else if (c.best->parsed()) {
    const std::optional<hpo::Trial> best = hpo::best_trial(trials, record.config.direction);
    COURSE_CHECK(best, "study ", name, " has no complete trial yet");
    std::printf("%s\n", hpo::trial_flags(record.config.space, *best).c_str());
  } else {
    COURSE_CHECK(std::filesystem::is_directory(c.out), "--out ", c.out, " is not a folder");
    for (const std::string& path : hpo::write_study_plots(record.config, trials, c.out)) {
      std::printf("wrote %s\n", path.c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Hyper-parameter studies shared by many workers (day 3)");
  app.require_subcommand(1);
  std::string db, name;
  const auto common = [&](CLI::App* command) {
    command
        ->add_option("--db", db,
                     "the study database: a SQLite file, or postgresql://user@host:port/dbname "
                     "(the password in ~/.pgpass or PGPASSFILE)")
        ->required();
    command->add_option("--study", name, "the study's name")->required();
  };
  CreateFlags create_flags;
  CLI::App* create_command = app.add_subcommand("create", "create a study");
  common(create_command);
  add_create_flags(create_command, create_flags);
  WorkerFlags worker_flags;
  CLI::App* worker_command = app.add_subcommand("worker", "run trials of a study");
  common(worker_command);
  add_worker_flags(worker_command, worker_flags);
  ReadingCommands reading;
  add_reading_commands(app, common, reading);
  CLI11_PARSE(app, argc, argv);
  reading.out = course::train::invocation_path(reading.out);
  reading.journal = course::train::invocation_path(reading.journal);

  return course::train::lab_main([&] {
    if (!hpo::is_server_location(db)) db = course::train::invocation_path(db);
    if (create_command->parsed()) return create(db, name, create_flags);
    if (worker_command->parsed()) return work(db, name, worker_flags);
    read_study(db, name, reading);
  });
}
