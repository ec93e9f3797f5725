// Optuna's journal of a study (optuna_journal.h), line for line as worked out by hand from
// Optuna 5's JournalStorage (optuna/storages/journal/_storage.py: op codes, the CREATE_TRIAL
// template's fields, distribution_to_json's strings): every kind of parameter, a finished and a
// running trial. That Optuna itself opens real exports is day3_data/hpo_tool/hpo_test.sh's.
#include "common/hpo/optuna_journal.h"

#include <gtest/gtest.h>

#include "common/core/error.h"

namespace course::hpo {
namespace {

StudyConfig mixed_study() {
  StudyConfig config;
  config.name = "mixed";
  config.direction = Direction::kMaximize;
  config.space = parse_search_space("lr=float:0.001:0.1:log;layers=int:1:4;opt=cat:sgd,adamw");
  config.seed = 7;
  config.objective = "lab --epochs 1";
  return config;
}

TEST(OptunaJournal, EachLineIsOptunasOwn) {
  Trial done;
  done.number = 0;
  done.state = TrialState::kComplete;
  done.params = {0.01, 3, 1};
  done.intermediate = {{1, 0.5}};
  done.rungs = {{0, 0.5}};
  done.value = 0.75;
  done.worker = "node1:42";
  done.started = 0.25;
  done.finished = 86400.5;
  Trial running;
  running.number = 1;
  running.params = {0.002, 2.6, 0};  // an int parameter's value as the sampler left it
  running.worker = "node2:7";
  running.started = 1;
  const std::vector<std::string> lines = optuna_journal_lines(mixed_study(), {done, running});
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(
      lines[0],
      R"({"directions":[2],"op_code":0,"study_name":"mixed","worker_id":"course-hpo-export"})");
  const std::string attr = R"({"op_code":2,"study_id":0,"user_attr":{)";
  const std::string by = R"(},"worker_id":"course-hpo-export"})";
  EXPECT_EQ(
      lines[1],
      attr + R"("search_space":"lr=float:0.001:0.1:log;layers=int:1:4;opt=cat:sgd,adamw")" + by);
  EXPECT_EQ(lines[2], attr + R"("sampler":"tpe")" + by);
  EXPECT_EQ(lines[3], attr + R"("pruner":"none")" + by);
  EXPECT_EQ(lines[4], attr + R"("seed":7)" + by);
  EXPECT_EQ(lines[5], attr + R"("objective":"lab --epochs 1")" + by);
  const std::string distributions =
      R"("distributions":{"layers":"{\"attributes\":{\"high\":4,\"log\":false,\"low\":1,)"
      R"(\"step\":1},\"name\":\"IntDistribution\"}","lr":"{\"attributes\":{\"high\":0.1,)"
      R"(\"log\":true,\"low\":0.001,\"step\":null},\"name\":\"FloatDistribution\"}",)"
      R"("opt":"{\"attributes\":{\"choices\":[\"sgd\",\"adamw\"]},)"
      R"(\"name\":\"CategoricalDistribution\"}"})";
  EXPECT_EQ(lines[6],
            R"({"datetime_complete":"1970-01-02T00:00:00.500000+00:00",)"
            R"("datetime_start":"1970-01-01T00:00:00.250000+00:00",)" +
                distributions +
                R"(,"intermediate_values":{"1":0.5},"op_code":4,)"
                R"("params":{"layers":3.0,"lr":0.01,"opt":1.0},"state":1,"study_id":0,)"
                R"("system_attrs":{},"user_attrs":{"rungs":{"0":0.5},"worker":"node1:42"},)"
                R"("value":0.75,"values":null,"worker_id":"course-hpo-export"})");
  EXPECT_EQ(lines[7], R"({"datetime_start":"1970-01-01T00:00:01.000000+00:00",)" + distributions +
                          R"(,"intermediate_values":{},"op_code":4,)"
                          R"("params":{"layers":3.0,"lr":0.002,"opt":0.0},"state":0,"study_id":0,)"
                          R"("system_attrs":{},"user_attrs":{"rungs":{},"worker":"node2:7"},)"
                          R"("value":null,"values":null,"worker_id":"course-hpo-export"})");
}

// Optuna numbers trials by their order in the journal: a gap in the numbers is refused rather
// than renumbered.
TEST(OptunaJournal, TrialNumbersMustRunFromZero) {
  Trial first, third;
  third.number = 2;
  EXPECT_THROW(optuna_journal_lines(mixed_study(), {first, third}), Error);
  EXPECT_EQ(optuna_journal_lines(mixed_study(), {}).size(), 6u);
}

}  // namespace
}  // namespace course::hpo
