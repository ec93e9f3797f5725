// The shared training loop on one process: a run stopped after N steps and resumed from its
// checkpoint ends bit-exactly where the straight run does; everything checkable is refused
// before the first step (a checkpoint folder that is missing, a resume file of another model
// named by its model first, a sharded checkpoint resumed in one process, a --chkpt naming a
// file that is not a checkpoint, which is left as it was);
// a stop signal writes the checkpoint after the step; the epoch hook can end a run early;
// --test runs its steps across epochs; --logdir's event file holds every step's loss and rate
// and each epoch's test metrics; --metrics has every epoch's record, and a resumed run's clock
// goes on from it; a clipped run logs every step's gradient norm.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/testing/errors_and_files.h"
#include "common/testing/event_file_reader.h"
#include "common/testing/tolerance.h"
#include "common/train/stop_signal.h"
#include "common/train/tests/loop_fixture.h"

namespace course::train {
namespace {

using ::testing::HasSubstr;
using testing::TinyRun;

TEST(TrainingLoop, ResumingFromACheckpointEndsBitExactlyWhereTheStraightRunDoes) {
  TinyRun straight(6);
  straight.run();
  TinyRun first(3);
  first.flags.chkpt = course::testing::temp_path("loop.ckpt");
  first.run();
  TinyRun second(6);
  second.flags.resume = first.flags.chkpt;
  const LoopResult resumed = second.run();
  EXPECT_EQ(second.steps_taken, 3);
  EXPECT_EQ(resumed.steps, 3);
  EXPECT_EQ(second.optimizer->steps(), 6);
  EXPECT_EQ(second.weights(), straight.weights());
  EXPECT_FLOAT_EQ(second.optimizer->lr(), straight.optimizer->lr());
}

TEST(TrainingLoop, AMissingCheckpointFolderIsRefusedBeforeTheFirstStep) {
  TinyRun run(3);
  run.flags.chkpt = "/no/such/dir/x.ckpt";
  EXPECT_THAT(course::testing::error_of([&] { run.run(); }),
              HasSubstr("--chkpt /no/such/dir/x.ckpt: folder /no/such/dir does not exist"));
  EXPECT_EQ(run.steps_taken, 0);
  run.flags.chkpt = course::testing::temp_path("");
  EXPECT_THAT(course::testing::error_of([&] { run.run(); }), HasSubstr("is a folder"));
  EXPECT_EQ(run.steps_taken, 0);
}

TEST(TrainingLoop, UnwritableMetricsAndProfileFilesAreRefusedBeforeTheFirstStep) {
  TinyRun run(3);
  run.flags.metrics = "/no/such/dir/metrics.jsonl";
  EXPECT_THAT(
      course::testing::error_of([&] { run.run(); }),
      HasSubstr("--metrics /no/such/dir/metrics.jsonl: folder /no/such/dir does not exist"));
  run.flags.metrics.clear();
  run.flags.profile = course::testing::temp_path("");  // a folder, not a file
  EXPECT_THAT(course::testing::error_of([&] { run.run(); }), HasSubstr("is a folder"));
  EXPECT_EQ(run.steps_taken, 0);
}

TEST(TrainingLoop, AResumeFileOfAnotherModelIsRefusedBeforeTheFirstStep) {
  Tensor t = Tensor::from_vector<float>({1}, {1});
  const std::string other = course::testing::temp_path("other.ckpt");
  save_checkpoint(other, {{"model.x", &t}}, {{"model", "resnet50"}});
  TinyRun run(3);
  run.flags.resume = other;
  EXPECT_THAT(course::testing::error_of([&] { run.run(); }),
              HasSubstr("is of model resnet50, not tiny"));
  EXPECT_EQ(run.steps_taken, 0);
  run.flags.resume = course::testing::temp_path("absent.ckpt");
  EXPECT_THAT(course::testing::error_of([&] { run.run(); }), HasSubstr("cannot open checkpoint"));
}

TEST(TrainingLoop, AResumeFileOfAnotherModelIsNamedByItsModelFirst) {
  Tensor t = Tensor::from_vector<float>({1}, {1});
  const std::string other = course::testing::temp_path("smallnet.ckpt");
  save_checkpoint(other, {{"model.x", &t}}, {{"model", "smallnet"}});
  TinyRun run(3);
  run.identity = {{"model", "tiny"}, {"context", 64}};  // "context" sorts before "model"
  run.flags.resume = other;
  EXPECT_THAT(course::testing::error_of([&] { run.run(); }),
              HasSubstr("smallnet.ckpt is of model smallnet, not tiny"));
  save_checkpoint(other, {{"model.x", &t}}, {{"model", "tiny"}});
  EXPECT_THAT(course::testing::error_of([&] { run.run(); }),
              HasSubstr("smallnet.ckpt records no context, not 64"));
  EXPECT_EQ(run.steps_taken, 0);
}

TEST(TrainingLoop, AShardedCheckpointResumedInOneProcessSaysHowManyRanksItNeeds) {
  Tensor t = Tensor::from_vector<float>({1}, {1});
  const std::string sharded = course::testing::temp_path("sharded.ckpt");
  for (int rank = 0; rank < 3; ++rank) {
    save_checkpoint(rank_file(sharded, rank, 3), {{"model.x", &t}},
                    with_rank_header({{"model", "tiny"}}, rank, 3));
  }
  EXPECT_TRUE(std::filesystem::exists(course::testing::temp_path("sharded.rank2-of-3.ckpt")))
      << "a rank's file keeps the given suffix";
  TinyRun run(3);
  run.flags.resume = sharded;
  EXPECT_THAT(course::testing::error_of([&] { run.run(); }),
              HasSubstr("was saved sharded, one file per rank on 3 ranks"));
  EXPECT_THAT(course::testing::error_of([&] { read_rank_file_header(sharded, 0, 2); }),
              HasSubstr("was saved on 3 ranks, and this run has 2: resume it on 3 ranks"));
  const std::string whole = course::testing::temp_path("whole.ckpt");
  save_checkpoint(whole, {{"model.x", &t}}, {{"model", "tiny"}});
  EXPECT_THAT(course::testing::error_of([&] { read_rank_file_header(whole, 0, 2); }),
              HasSubstr("holds one process's state, not a file per rank"));
  EXPECT_EQ(rank_file("runs/model", 1, 4), "runs/model.rank1-of-4");
  std::filesystem::remove(rank_file(sharded, 1, 3));
  EXPECT_THAT(course::testing::error_of([&] { read_rank_file_header(sharded, 1, 3); }),
              HasSubstr("sharded.rank1-of-3.ckpt is missing"))
      << "saved on as many ranks as this run, one rank's file gone";
}

TEST(TrainingLoop, AChkptThatIsNotACheckpointIsLeftAsItWas) {
  const std::string notes = course::testing::temp_path("notes.txt");
  std::ofstream(notes) << "a trainee's notes\n";
  TinyRun run(3);
  run.flags.chkpt = notes;
  EXPECT_THAT(course::testing::error_of([&] { run.run(); }),
              HasSubstr("--chkpt " + notes + " is a file that is not a checkpoint"));
  EXPECT_EQ(run.steps_taken, 0);
  Tensor t = Tensor::from_vector<float>({1}, {1});
  EXPECT_THAT(course::testing::error_of([&] {
                save_checkpoint(notes, {{"x", &t}}, {});
              }),
              HasSubstr("is a file that is not a checkpoint: it is left as it is"));
  std::ifstream in(notes);
  const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "a trainee's notes\n");
  const std::string checkpoint = course::testing::temp_path("again.ckpt");
  std::ofstream(checkpoint).close();
  EXPECT_NO_THROW(save_checkpoint(checkpoint, {{"x", &t}}, {})) << "an empty file is replaced";
  EXPECT_NO_THROW(save_checkpoint(checkpoint, {{"x", &t}}, {})) << "a checkpoint is replaced";
}

TEST(TrainingLoop, AStopSignalCheckpointsAfterTheStep) {
  install_stop_handlers();
  TinyRun run(6);
  run.flags.chkpt = course::testing::temp_path("stopped.ckpt");
  run.on_step = [](int64_t step) {
    if (step == 2) course::train::send_stop_signal(SIGUSR1);
  };
  EXPECT_THAT(course::testing::error_of([&] { run.run(); }), HasSubstr("SIGUSR1 after step 2"));
  install_stop_handlers();  // forget the signal
  EXPECT_EQ(read_checkpoint_header(run.flags.chkpt).at("step"), 2);
  EXPECT_EQ(read_checkpoint_header(run.flags.chkpt).at("batch"), 2);
}

TEST(TrainingLoop, ADivergingLossStopsTheRun) {
  TinyRun run(3);
  run.data.images = Tensor::from_vector(std::vector<float>(32 * 4, INFINITY), {32, 4});
  EXPECT_THAT(course::testing::error_of([&] { run.run(); }), HasSubstr("diverged"));
  EXPECT_EQ(run.steps_taken, 1);
}

TEST(TrainingLoop, TheEpochHookSeesEachValidationAndCanEndTheRun) {
  TinyRun run(0);
  run.flags.test = false;
  run.flags.epochs = 5;
  std::vector<int64_t> epochs;
  run.after_epoch = [&](int64_t epoch, const EvalTally& validation) {
    EXPECT_EQ(validation.samples, 32);
    epochs.push_back(epoch);
    return epoch < 2;  // a pruner stopping the trial after its second epoch
  };
  const LoopResult result = run.run();
  EXPECT_EQ(epochs, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(result.ended_early);
  EXPECT_EQ(run.steps_taken, 16);
  EXPECT_TRUE(result.test_accuracy.has_value());
}

TEST(TrainingLoop, TestModeRunsItsStepsAcrossEpochs) {
  TinyRun run(20);  // 8 steps per epoch
  run.flags.epochs = 3;
  const LoopResult result = run.run();
  EXPECT_EQ(run.steps_taken, 20);
  EXPECT_FALSE(result.test_accuracy.has_value()) << "no validation in test mode";
  TinyRun bounded(20);
  bounded.flags.epochs = 2;
  bounded.run();
  EXPECT_EQ(bounded.steps_taken, 16) << "within --epochs";
}

TEST(TrainingLoop, LogdirHasEveryStepsLossAndRateAndEachEpochsTestMetrics) {
  TinyRun run(0);
  run.flags.test = false;
  run.flags.epochs = 2;
  run.flags.logdir = course::testing::temp_path("logdir");
  const LoopResult result = run.run();
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(run.flags.logdir)) {
    files.push_back(entry.path());
  }
  ASSERT_EQ(files.size(), 1u);
  std::map<std::string, std::vector<std::pair<int64_t, float>>> series;
  for (const course::testing::ScalarEvent& scalar : course::testing::read_scalars(files[0])) {
    series[scalar.tag].emplace_back(scalar.step, scalar.value);
  }
  ASSERT_EQ(series["train/loss"].size(), 16u);
  ASSERT_EQ(series["train/lr"].size(), 16u);
  for (int64_t k = 1; k <= 16; ++k) {
    EXPECT_EQ(series["train/lr"][k - 1].first, k);
    EXPECT_FLOAT_EQ(series["train/lr"][k - 1].second, 0.1f / static_cast<float>(k))
        << "step k ran at lr_at(k - 1) = 0.1 / k";
  }
  EXPECT_FLOAT_EQ(series["train/loss"].back().second, result.last_loss);
  ASSERT_EQ(series["test/accuracy"].size(), 2u);
  EXPECT_EQ(series["test/accuracy"][0].first, 8);
  EXPECT_FLOAT_EQ(series["test/accuracy"][1].second, static_cast<float>(*result.test_accuracy));
  EXPECT_FLOAT_EQ(series["test/loss"][1].second, static_cast<float>(*result.test_loss));
  ASSERT_EQ(series["time/elapsed_s"].size(), 2u);
  EXPECT_LE(series["time/elapsed_s"][0].second, series["time/elapsed_s"][1].second);
}

std::vector<nlohmann::json> read_records(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
  return records;
}

TEST(TrainingLoop, MetricsHaveEachEpochsLossesAccuraciesSpeedTimesAndMemory) {
  TinyRun run(0);
  run.flags.test = false;
  run.flags.epochs = 2;
  run.flags.metrics = course::testing::temp_path("metrics.jsonl");
  run.epoch_training_tally = [] { return EvalTally{.correct = 3, .loss_sum = 0, .samples = 4}; };
  const LoopResult result = run.run();
  const std::vector<nlohmann::json> records = read_records(run.flags.metrics);
  ASSERT_EQ(records.size(), 2u);
  double previous_elapsed = 0;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    const nlohmann::json& r = records[epoch - 1];
    EXPECT_EQ(r["epoch"], epoch);
    EXPECT_EQ(r["images"], 32 * epoch);
    double loss_sum = 0;
    for (int k = 0; k < 8; ++k) loss_sum += run.losses[8 * (epoch - 1) + k];
    EXPECT_NEAR(r["train_loss_mean"].get<double>(), loss_sum / 8, 1e-6);
    EXPECT_DOUBLE_EQ(r["train_accuracy"].get<double>(), 0.75) << "the lab's tally, 3 of 4";
    EXPECT_NEAR(r["images_per_second"].get<double>(), 32 / r["epoch_s"].get<double>(), 1e-6);
    EXPECT_GT(r["peak_memory_bytes"].get<int64_t>(), 0);
    EXPECT_GT(r["core_hours"].get<double>(), 0);
    EXPECT_EQ(r["gpu_hours"].get<double>(), 0) << "a CPU run";
    EXPECT_TRUE(r.contains("energy_cpu_j") && r.contains("energy_gpu_j"));
    EXPECT_GE(r["validation_s"].get<double>(), 0);
    EXPECT_GE(r["elapsed_s"].get<double>(),
              previous_elapsed + r["epoch_s"].get<double>() + r["validation_s"].get<double>());
    previous_elapsed = r["elapsed_s"].get<double>();
  }
  EXPECT_DOUBLE_EQ(records[1]["test_accuracy"].get<double>(), *result.test_accuracy);
}

// With --clip-grad-norm, TensorBoard has every step's norm before clipping, and each epoch's
// record its last and largest; the run ends with the summary line.
TEST(TrainingLoop, ClippedRunsLogEveryStepsGradientNorm) {
  TinyRun run(0);
  run.flags.test = false;
  run.flags.epochs = 2;
  run.flags.logdir = course::testing::temp_path("clipped-logdir");
  run.flags.metrics = course::testing::temp_path("clipped.jsonl");
  run.clip_grad_norm = 0.2f;
  ::testing::internal::CaptureStdout();
  run.run();
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(run.gradient_norms.size(), 16u);
  std::vector<float> logged;
  for (const auto& entry : std::filesystem::directory_iterator(run.flags.logdir)) {
    for (const course::testing::ScalarEvent& scalar : course::testing::read_scalars(entry.path())) {
      if (scalar.tag == "train/grad_norm") logged.push_back(scalar.value);
    }
  }
  EXPECT_TRUE(course::testing::all_close(logged, run.gradient_norms, DType::kF32));
  const std::vector<nlohmann::json> records = read_records(run.flags.metrics);
  ASSERT_EQ(records.size(), 2u);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const auto begin = run.gradient_norms.begin() + 8 * epoch;
    EXPECT_NEAR(records[epoch]["grad_norm"].get<double>(), *(begin + 7), 1e-5);
    EXPECT_NEAR(records[epoch]["grad_norm_max"].get<double>(), *std::max_element(begin, begin + 8),
                1e-5);
  }
  EXPECT_THAT(out, HasSubstr("clipped to 0.2 in"));
  EXPECT_THAT(out, HasSubstr("energy: CPU packages"));
  EXPECT_THAT(out, HasSubstr("core-hours"));
}

TEST(TrainingLoop, AResumedRunsClockGoesOnFromItsMetricsLastRecord) {
  TinyRun first(0);
  first.flags.test = false;
  first.flags.epochs = 1;
  first.flags.chkpt = course::testing::temp_path("clock.ckpt");
  first.run();
  const std::string metrics = course::testing::temp_path("clock.jsonl");
  std::ofstream(metrics) << R"({"recipe": {}})"
                         << "\n"
                         << R"({"epoch": 1, "elapsed_s": 1000})"
                         << "\n";
  TinyRun second(0);
  second.flags.test = false;
  second.flags.epochs = 2;
  second.flags.resume = first.flags.chkpt;
  second.flags.metrics = metrics;
  second.run();
  const std::vector<nlohmann::json> records = read_records(metrics);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[2]["epoch"], 2);
  EXPECT_GE(records[2]["elapsed_s"].get<double>(), 1000);
  EXPECT_LT(records[2]["elapsed_s"].get<double>(), 1000 + 60);
}

TEST(TrainingLoop, AnUnwritableLogdirIsRefusedBeforeTheFirstStep) {
  TinyRun run(3);
  const std::string file = course::testing::temp_path("not_a_folder");
  std::ofstream(file) << "x";
  run.flags.logdir = file + "/logs";
  EXPECT_THAT(course::testing::error_of([&] { run.run(); }), HasSubstr("cannot create the folder"));
  EXPECT_EQ(run.steps_taken, 0);
}

}  // namespace
}  // namespace course::train
