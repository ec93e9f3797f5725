// The study storage on both stores (a SQLite file, a PostgreSQL server): round trips, many worker
// processes on one study, a worker killed in the middle of its trial and another started in its
// place; each store's refusals, and a server that goes away in the middle of a study.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <set>
#include <thread>

#include "common/core/error.h"
#include "common/hpo/objectives.h"
#include "common/hpo/study.h"
#include "common/hpo/tests/study_stores.h"

namespace course::hpo {
namespace {

using testing_stores::fresh_location;
using testing_stores::Store;

constexpr uint64_t kSeed = 0x9e3779b97f4a7c15;  // past 2^63: a 32-bit or signed column fails

const StoreOptions kCreating{.create = true, .journal = JournalMode::kWal};

class StudyStorageOn : public testing::TestWithParam<Store> {
 protected:
  std::string fresh(const std::string& name) { return fresh_location(GetParam(), name); }
};

StudyConfig himmelblau_study(const std::string& sampler, const std::string& pruner = "none") {
  StudyConfig config;
  config.name = "himmelblau";
  config.space = parse_search_space(synthetic_space("himmelblau"));
  config.sampler = sampler;
  config.pruner = pruner;
  config.seed = kSeed;
  return config;
}

TEST_P(StudyStorageOn, RoundTripsStudiesAndTrials) {
  const std::string path = fresh("round_trip");
  {
    StudyStorage storage(path, kCreating);
    storage.create_study(himmelblau_study("tpe:univariate", "sh:min=1,eta=3"));
    EXPECT_THROW(storage.create_study(himmelblau_study("random")), Error);
    Study study(storage, "himmelblau");
    Trial trial = *study.ask("worker-a");
    study.report(trial, 1, 2.5);
    study.report(trial, 2, NAN);
    study.report(trial, 3, -INFINITY);
    study.tell(trial, TrialState::kComplete, 1.25);
    Trial second = *study.ask("worker-b");
    EXPECT_EQ(second.number, 1);
  }
  StudyStorage reopened(path);
  EXPECT_EQ(reopened.study_names(), std::vector<std::string>{"himmelblau"});
  const StudyRecord record = reopened.load_study("himmelblau");
  EXPECT_EQ(record.config.sampler, "tpe:univariate");
  EXPECT_EQ(record.config.pruner, "sh:min=1,eta=3");
  EXPECT_EQ(record.config.seed, kSeed);
  EXPECT_EQ(to_string(record.config.space), to_string(himmelblau_study("tpe").space));
  const std::vector<Trial> trials = reopened.trials(record.id);
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].state, TrialState::kComplete);
  EXPECT_EQ(trials[0].value, 1.25);
  EXPECT_EQ(trials[0].params.size(), 2u);
  EXPECT_EQ(trials[0].intermediate.at(1), 2.5);
  EXPECT_TRUE(std::isnan(trials[0].intermediate.at(2)));
  EXPECT_EQ(trials[0].intermediate.at(3), -INFINITY);
  EXPECT_GT(trials[0].finished.value_or(0), trials[0].started);
  EXPECT_EQ(trials[0].rungs.at(0), 2.5);  // successive halving's first rung, at step 1
  EXPECT_EQ(trials[1].state, TrialState::kRunning);
  EXPECT_THROW(reopened.load_study("nope"), Error);
}

TEST_P(StudyStorageOn, RefusesAStoreWithoutStudies) {
  const std::string location = fresh("no_tables");
  if (GetParam() == Store::kSqlite) {
    EXPECT_THROW(StudyStorage storage(location), Error) << "an absent file was made";
    StudyStorage(location, kCreating);
  }
  StudyStorage storage(location);
  EXPECT_THROW(storage.load_study("any"), Error);
  EXPECT_THROW(storage.study_names(), Error);
}

// Runs `body` in a child process; returns its exit status.
template <class Body>
pid_t spawn(Body body) {
  const pid_t pid = fork();
  if (pid == 0) {
    int status = 0;
    try {
      body();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "child: %s\n", error.what());
      status = 1;
    }
    _exit(status);
  }
  return pid;
}

// Runs `trials` of the study as `worker`, each reported at three steps; the victim is killed in
// the middle of its trial number `killed_at` (after writing to `ready`).
void run_worker(const std::string& location, const HeartbeatOptions& heartbeat,
                const std::string& worker, int trials, int killed_at = -1, int ready = -1) {
  StudyStorage storage(location);
  Study study(storage, "himmelblau", heartbeat);
  for (int t = 0; t < trials; ++t) {
    Trial trial = *study.ask(worker);
    if (t == killed_at) {
      HeartbeatThread beat(storage, trial.id, heartbeat.interval_seconds);
      const char byte = 1;
      if (write(ready, &byte, 1) != 1) _exit(2);
      std::this_thread::sleep_for(std::chrono::seconds(60));
    }
    const double value = himmelblau(trial.params[0], trial.params[1]);
    bool pruned = false;
    for (int step = 1; step <= 3 && !pruned; ++step) {
      pruned = study.report(trial, step, value * (4 - step));
    }
    study.tell(trial, pruned ? TrialState::kPruned : TrialState::kComplete,
               pruned ? std::nullopt : std::optional<double>(value));
  }
}

TEST_P(StudyStorageOn, EightWorkersShareOneStudyOneIsKilledAndOneStartedInItsPlace) {
  const std::string location = fresh("eight_workers");
  StudyStorage(location, kCreating).create_study(himmelblau_study("tpe:univariate", "median"));
  const HeartbeatOptions heartbeat{0.1, 3.0};  // margins for loaded, sanitised CI runs
  constexpr int kWorkers = 8, kTrialsEach = 12, kVictimTrials = 3;
  int victim_ready[2];
  ASSERT_EQ(pipe(victim_ready), 0);
  std::vector<pid_t> workers;
  for (int w = 0; w < kWorkers; ++w) {
    const bool victim = w == kWorkers - 1;
    workers.push_back(spawn([&] {
      run_worker(location, heartbeat, "worker-" + std::to_string(w), kTrialsEach,
                 victim ? kVictimTrials : -1, victim_ready[1]);
    }));
  }
  char byte = 0;
  ASSERT_EQ(read(victim_ready[0], &byte, 1), 1);
  kill(workers.back(), SIGKILL);
  waitpid(workers.back(), nullptr, 0);
  workers.back() = spawn([&] {  // its place taken: the trials it had left
    run_worker(location, heartbeat, "replacement", kTrialsEach - kVictimTrials - 1);
  });
  for (pid_t pid : workers) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a worker failed";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  StudyStorage storage(location);
  Study study(storage, "himmelblau", heartbeat);
  study.fail_stale_trials();  // unless a worker's ask came after the grace period
  const std::vector<Trial> trials = study.trials();
  ASSERT_EQ(trials.size(), static_cast<size_t>(kWorkers * kTrialsEach));
  std::set<ParamValues> points;
  std::vector<std::string> failed;
  for (size_t i = 0; i < trials.size(); ++i) {
    EXPECT_EQ(trials[i].number, static_cast<int>(i));
    EXPECT_NE(trials[i].state, TrialState::kRunning);
    if (trials[i].state == TrialState::kFail) failed.push_back(trials[i].worker);
    points.insert(trials[i].params);
  }
  EXPECT_EQ(failed, std::vector<std::string>{"worker-7"}) << "the killed trial alone fails";
  EXPECT_EQ(points.size(), trials.size()) << "two trials got the same point";
}

TEST_P(StudyStorageOn, AKilledWorkersTrialIsMarkedFailedAndTheStudyGoesOn) {
  const std::string location = fresh("killed_worker");
  StudyStorage(location, kCreating).create_study(himmelblau_study("random"));
  const HeartbeatOptions heartbeat{0.1, 3.0};  // margins for loaded, sanitised CI runs
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t victim = spawn([&] { run_worker(location, heartbeat, "victim", 1, 0, ready[1]); });
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);

  StudyStorage storage(location);
  Study study(storage, "himmelblau", heartbeat);
  const Trial alive = *study.ask("survivor");
  HeartbeatThread beat(storage, alive.id, heartbeat.interval_seconds);
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  EXPECT_EQ(study.fail_stale_trials(), 0) << "a beating trial was failed";

  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  const Trial next = *study.ask("survivor");  // marks the victim's trial failed on the way
  EXPECT_EQ(next.number, 2);
  const std::vector<Trial> trials = study.trials();
  EXPECT_EQ(trials[0].state, TrialState::kFail);
  EXPECT_EQ(trials[1].state, TrialState::kRunning);
  study.tell(alive, TrialState::kComplete, 1.0);
  EXPECT_EQ(study.trials()[1].state, TrialState::kComplete);
}

INSTANTIATE_TEST_SUITE_P(Stores, StudyStorageOn, testing::Values(Store::kSqlite, Store::kPostgres),
                         [](const auto& info) { return testing_stores::store_name(info.param); });

TEST(SqliteStore, RefusesAFileThatIsNotADatabase) {
  const std::string path = fresh_location(Store::kSqlite, "not_a_database");
  std::ofstream(path) << "this is a text file, not SQLite, and it is long enough to be read";
  EXPECT_THROW(StudyStorage storage(path), Error);
  EXPECT_THROW(StudyStorage storage("/nonexistent-dir/study.db", kCreating), Error);
}

}  // namespace
}  // namespace course::hpo
