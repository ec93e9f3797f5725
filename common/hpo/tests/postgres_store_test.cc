// The PostgreSQL store's own cases: the locations and servers it refuses, each with one message,
// and a server that goes away in the middle of a study (the worker waits for it, or gives up
// after its grace period with the study intact).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/core/error.h"
#include "common/hpo/objectives.h"
#include "common/hpo/study.h"
#include "common/hpo/tests/study_stores.h"

namespace course::hpo {
namespace {

using testing::HasSubstr;
using testing_stores::fresh_location;
using testing_stores::server_url;
using testing_stores::Store;

template <class Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

std::string opening_error(const std::string& location) {
  return error_of([&] { StudyStorage storage(location); });
}

StudyConfig rosenbrock_study() {
  StudyConfig config;
  config.name = "rosenbrock";
  config.space = parse_search_space(synthetic_space("rosenbrock"));
  config.sampler = "random";
  return config;
}

TEST(PostgresStore, RefusesEachBadLocationWithOneMessage) {
  EXPECT_THAT(opening_error("mysql://course@localhost/studies"), HasSubstr("scheme 'mysql'"));
  EXPECT_THAT(opening_error("postgresql://course:secret@127.0.0.1/studies"),
              HasSubstr("carries a password: put it in ~/.pgpass"));
  EXPECT_THAT(opening_error("postgresql://course:secret@127.0.0.1/studies"),
              testing::Not(HasSubstr("secret")));
  EXPECT_THAT(opening_error("postgresql://course@127.0.0.1:1/studies"),
              HasSubstr("cannot connect to the study server"));
  const std::string url = server_url("studies");
  const std::string pgpass = std::getenv("PGPASSFILE");
  const std::string wrong = testing::TempDir() + "/wrong_pgpass";
  std::ofstream(wrong) << "*:*:*:course:not-the-password\n";
  std::filesystem::permissions(wrong, std::filesystem::perms::owner_read);
  setenv("PGPASSFILE", wrong.c_str(), 1);
  EXPECT_THAT(opening_error(url), HasSubstr("password authentication failed"));
  setenv("PGPASSFILE", pgpass.c_str(), 1);
  EXPECT_THAT(opening_error(server_url("no_such_database")),
              HasSubstr("database \"no_such_database\" does not exist"));
}

TEST(PostgresStore, AWorkerWaitsForAServerThatComesBackAndGivesUpOnOneThatDoesNot) {
  const std::string location = fresh_location(Store::kPostgres, "server_away");
  StudyStorage(location, {.create = true}).create_study(rosenbrock_study());
  StudyStorage storage(location, {.reconnect_seconds = 20});
  Study study(storage, "rosenbrock");
  const Trial first = *study.ask("worker");
  testing_stores::kill_server();
  std::thread restart([] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    testing_stores::start_server();
  });
  const std::string waited = error_of([&] { study.tell(first, TrialState::kComplete, 1.0); });
  restart.join();
  EXPECT_EQ(waited, "(no error)") << "the worker did not wait for its server";
  EXPECT_EQ(study.ask("worker")->number, 1);

  StudyStorage impatient(location, {.reconnect_seconds = 2});
  Study impatient_study(impatient, "rosenbrock");
  testing_stores::kill_server();
  EXPECT_THAT(error_of([&] { impatient_study.ask("worker"); }),
              HasSubstr("could not reconnect for 2 s"));
  testing_stores::start_server();
  StudyStorage another(location);
  Study study_again(another, "rosenbrock");
  const std::vector<Trial> trials = study_again.trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].state, TrialState::kComplete);
  EXPECT_EQ(study_again.ask("another worker")->number, 2);
}

}  // namespace
}  // namespace course::hpo
