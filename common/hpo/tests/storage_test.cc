// The study storage: round trips, refusals, many worker processes on one file, and a worker
// killed in the middle of its trial.
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

namespace course::hpo {
namespace {

std::string fresh_database(const std::string& name) {
  const std::string path = testing::TempDir() + "/" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  return path;
}

StudyConfig himmelblau_study(const std::string& sampler, const std::string& pruner = "none") {
  StudyConfig config;
  config.name = "himmelblau";
  config.space = parse_search_space(synthetic_space("himmelblau"));
  config.sampler = sampler;
  config.pruner = pruner;
  config.seed = 11;
  return config;
}

TEST(StudyStorage, RoundTripsStudiesAndTrials) {
  const std::string path = fresh_database("round_trip");
  {
    StudyStorage storage(path);
    storage.create_study(himmelblau_study("tpe:univariate", "sh:min=1,eta=3"));
    EXPECT_THROW(storage.create_study(himmelblau_study("random")), Error);
    Study study(storage, "himmelblau");
    Trial trial = *study.ask("worker-a");
    study.report(trial, 1, 2.5);
    study.report(trial, 2, NAN);
    study.tell(trial, TrialState::kComplete, 1.25);
    Trial second = *study.ask("worker-b");
    EXPECT_EQ(second.number, 1);
  }
  StudyStorage reopened(path);
  EXPECT_EQ(reopened.study_names(), std::vector<std::string>{"himmelblau"});
  const StudyRecord record = reopened.load_study("himmelblau");
  EXPECT_EQ(record.config.sampler, "tpe:univariate");
  EXPECT_EQ(record.config.pruner, "sh:min=1,eta=3");
  EXPECT_EQ(record.config.seed, 11u);
  EXPECT_EQ(to_string(record.config.space), to_string(himmelblau_study("tpe").space));
  const std::vector<Trial> trials = reopened.trials(record.id);
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].state, TrialState::kComplete);
  EXPECT_EQ(trials[0].value, 1.25);
  EXPECT_EQ(trials[0].params.size(), 2u);
  EXPECT_EQ(trials[0].intermediate.at(1), 2.5);
  EXPECT_TRUE(std::isnan(trials[0].intermediate.at(2)));
  EXPECT_EQ(trials[0].rungs.at(0), 2.5);  // successive halving's first rung, at step 1
  EXPECT_EQ(trials[1].state, TrialState::kRunning);
  EXPECT_THROW(reopened.load_study("nope"), Error);
}

TEST(StudyStorage, RefusesAFileThatIsNotADatabase) {
  const std::string path = fresh_database("not_a_database");
  std::ofstream(path) << "this is a text file, not SQLite, and it is long enough to be read";
  EXPECT_THROW(StudyStorage storage(path), Error);
  EXPECT_THROW(StudyStorage storage("/nonexistent-dir/study.db"), Error);
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

TEST(StudyStorage, EightWorkerProcessesShareOneStudyAndOneIsKilled) {
  const std::string path = fresh_database("eight_workers");
  StudyStorage(path, JournalMode::kWal).create_study(himmelblau_study("tpe:univariate", "median"));
  const HeartbeatOptions heartbeat{0.1, 3.0};  // margins for loaded, sanitised CI runs
  constexpr int kWorkers = 8, kTrialsEach = 12, kVictimTrials = 3;
  int victim_ready[2];
  ASSERT_EQ(pipe(victim_ready), 0);
  std::vector<pid_t> workers;
  for (int w = 0; w < kWorkers; ++w) {
    const bool victim = w == kWorkers - 1;
    workers.push_back(spawn([&] {
      StudyStorage storage(path);
      Study study(storage, "himmelblau", heartbeat);
      for (int t = 0; t < kTrialsEach; ++t) {
        Trial trial = *study.ask("worker-" + std::to_string(w));
        if (victim && t == kVictimTrials) {  // killed in the middle of its fourth trial
          HeartbeatThread beat(path, trial.id, heartbeat.interval_seconds);
          const char byte = 1;
          if (write(victim_ready[1], &byte, 1) != 1) _exit(2);
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
    }));
  }
  char byte = 0;
  ASSERT_EQ(read(victim_ready[0], &byte, 1), 1);
  kill(workers.back(), SIGKILL);
  for (pid_t pid : workers) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (pid != workers.back()) {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a worker failed";
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  StudyStorage storage(path);
  Study study(storage, "himmelblau", heartbeat);
  EXPECT_EQ(study.fail_stale_trials(), 1);
  const std::vector<Trial> trials = study.trials();
  ASSERT_EQ(trials.size(), static_cast<size_t>((kWorkers - 1) * kTrialsEach + kVictimTrials + 1));
  std::set<ParamValues> points;
  int failed = 0;
  for (size_t i = 0; i < trials.size(); ++i) {
    EXPECT_EQ(trials[i].number, static_cast<int>(i));
    EXPECT_NE(trials[i].state, TrialState::kRunning);
    failed += trials[i].state == TrialState::kFail;
    points.insert(trials[i].params);
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(points.size(), trials.size()) << "two trials got the same point";
}

TEST(StudyStorage, AKilledWorkersTrialIsMarkedFailedAndTheStudyGoesOn) {
  const std::string path = fresh_database("killed_worker");
  StudyStorage(path, JournalMode::kWal).create_study(himmelblau_study("random"));
  const HeartbeatOptions heartbeat{0.1, 3.0};  // margins for loaded, sanitised CI runs
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t victim = spawn([&] {
    StudyStorage storage(path);
    Study study(storage, "himmelblau", heartbeat);
    const Trial trial = *study.ask("victim");
    HeartbeatThread beat(path, trial.id, heartbeat.interval_seconds);
    const char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(2);
    std::this_thread::sleep_for(std::chrono::seconds(60));
  });
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);

  StudyStorage storage(path);
  Study study(storage, "himmelblau", heartbeat);
  const Trial alive = *study.ask("survivor");
  HeartbeatThread beat(path, alive.id, heartbeat.interval_seconds);
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

}  // namespace
}  // namespace course::hpo
