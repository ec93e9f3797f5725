// Checkpoints (round trip, atomic replacement, corrupt and mismatched files), the profiler's
// Chrome trace, the chronometer's accounting, and validation leaving the model's mode as it was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/core/activity_log.h"
#include "common/kernels/elementwise.h"
#include "common/models/models.h"
#include "common/testing/errors_and_files.h"
#include "common/train/checkpoint.h"
#include "common/train/chronometer.h"
#include "common/train/evaluate.h"
#include "common/train/profiler.h"

namespace course::train {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::temp_path;

TEST(Checkpoint, RoundTripsTensorsAndHeader) {
  Tensor a = Tensor::from_vector<float>({1.5f, -2.0f, 3.25f}, {3});
  Tensor b = Tensor::from_vector<int64_t>({7, 8, 9, 10}, {2, 2});
  const std::string path = temp_path("round.ckpt");
  save_checkpoint(path, {{"a", &a}, {"b", &b}}, {{"epoch", 3}, {"model", "smallnet"}});
  Tensor a2 = zeros({3}), b2 = zeros({2, 2}, DType::kI64);
  const auto header = load_checkpoint(path, {{"b", &b2}, {"a", &a2}});
  EXPECT_EQ(header["epoch"], 3);
  EXPECT_EQ(a2.to_vector<float>(), a.to_vector<float>());
  EXPECT_EQ(b2.to_vector<int64_t>(), b.to_vector<int64_t>());
}

TEST(Checkpoint, AFailedSaveLeavesThePreviousFileIntact) {
  Tensor a = Tensor::from_vector<float>({1.0f}, {1});
  const std::string path = temp_path("keep.ckpt");
  save_checkpoint(path, {{"a", &a}}, {{"epoch", 1}});
  Tensor undefined;
  EXPECT_THROW(save_checkpoint(path, {{"a", &a}, {"broken", &undefined}}, {{"epoch", 2}}), Error);
  Tensor a2 = zeros({1});
  EXPECT_EQ(load_checkpoint(path, {{"a", &a2}})["epoch"], 1);
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    EXPECT_THAT(entry.path().string(), ::testing::Not(HasSubstr(".tmp.")));
  }
}

TEST(Checkpoint, MismatchedCorruptAndMissingFilesAreClearErrors) {
  Tensor a = Tensor::from_vector<float>({1.0f, 2.0f}, {2});
  const std::string path = temp_path("mismatch.ckpt");
  save_checkpoint(path, {{"a", &a}}, {});
  Tensor wrong_shape = zeros({3});
  EXPECT_THAT(error_of([&] {
                load_checkpoint(path, {{"a", &wrong_shape}});
              }),
              HasSubstr("'a' is (2,), the model has (3,)"));
  Tensor other = zeros({2});
  EXPECT_THAT(error_of([&] {
                load_checkpoint(path, {{"a", &other}, {"b", &other}});
              }),
              HasSubstr("lacks 'b'"));
  EXPECT_THAT(error_of([&] { load_checkpoint(path, {}); }),
              HasSubstr("which this model does not have"));
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 3);
  EXPECT_THAT(error_of([&] {
                load_checkpoint(path, {{"a", &other}});
              }),
              HasSubstr("truncated or corrupt"));
  std::ofstream(temp_path("text.ckpt")) << "hello, this is a text file and not a checkpoint";
  EXPECT_THAT(error_of([&] { load_checkpoint(temp_path("text.ckpt"), {}); }),
              HasSubstr("is not a checkpoint"));
  EXPECT_THAT(error_of([&] { load_checkpoint(temp_path("absent.ckpt"), {}); }),
              HasSubstr("cannot open checkpoint"));
}

TEST(Profiler, WritesNestedRangesAsChromeTrace) {
  Profiler profiler(Device::cpu());
  {
    auto step = profiler.range("step");
    { auto forward = profiler.range("forward"); }
    { auto backward = profiler.range("backward"); }
  }
  const std::string path = temp_path("trace.json");
  profiler.write(path);
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  ASSERT_EQ(trace["traceEvents"].size(), 4u);  // the three ranges and the process's name
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& e : trace["traceEvents"]) by_name[e["name"]] = e;
  EXPECT_EQ(by_name["forward"]["ph"], "X");
  const double step_start = by_name["step"]["ts"],
               step_end = step_start + by_name["step"]["dur"].get<double>();
  for (const char* inner : {"forward", "backward"}) {
    EXPECT_GE(by_name[inner]["ts"].get<double>(), step_start);
    EXPECT_LE(by_name[inner]["ts"].get<double>() + by_name[inner]["dur"].get<double>(), step_end);
  }
  Profiler off(Device::cpu(), false);
  { auto r = off.range("ignored"); }
  EXPECT_EQ(off.event_count(), 0u);
}

// Activity (a collective in flight, a wait for it) is kept while a recorded range is open:
// in flight as an asynchronous begin/end pair, a wait as a range nested in the open one.
TEST(Profiler, AddsTheActivityOfRecordedRanges) {
  ActivityLog& log = ActivityLog::instance();
  const auto now = std::chrono::steady_clock::now();
  Profiler profiler(Device::cpu());
  log.add({"before", true, now, now});
  {
    auto step = profiler.range("step");
    log.add({"all_gather 1.00 KiB", true, now, std::chrono::steady_clock::now()});
    const auto wait_start = std::chrono::steady_clock::now();
    log.add({"wait all_gather 1.00 KiB", false, wait_start, std::chrono::steady_clock::now()});
  }
  { auto unrecorded = profiler.range("unrecorded", false); }
  log.add({"after", true, now, now});
  EXPECT_FALSE(log.listening());
  const std::string path = temp_path("activity.json");
  profiler.write(path);
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  std::multiset<std::string> seen;
  for (const auto& e : trace["traceEvents"]) {
    seen.insert(e["name"].get<std::string>() + ":" + e["ph"].get<std::string>());
  }
  EXPECT_EQ(seen,
            (std::multiset<std::string>{"process_name:M", "step:X", "all_gather 1.00 KiB:b",
                                        "all_gather 1.00 KiB:e", "wait all_gather 1.00 KiB:X"}));
}

TEST(Chronometer, ExcludesTheFirstStepAndSplitsPhases) {
  Chronometer chrono(Device::cpu());
  for (int step = 0; step < 3; ++step) {
    chrono.start(Phase::kLoad);
    std::this_thread::sleep_for(std::chrono::milliseconds(step == 0 ? 50 : 2));
    chrono.start(Phase::kForward);
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
    chrono.start(Phase::kOptimizer);  // no backward phase in this step
    chrono.end_step(16);
  }
  const ChronometerReport r = chrono.report();
  EXPECT_EQ(r.steps, 2);
  EXPECT_GE(r.mean_ms[static_cast<int>(Phase::kLoad)], 2.0);
  EXPECT_LT(r.mean_ms[static_cast<int>(Phase::kLoad)], 45.0);  // the 50 ms first step is excluded
  EXPECT_GE(r.mean_ms[static_cast<int>(Phase::kForward)], 4.0);
  EXPECT_EQ(r.mean_ms[static_cast<int>(Phase::kBackward)], 0.0);
  EXPECT_THAT(r.table(), HasSubstr("max memory allocated"));
  EXPECT_THAT(r.table(), HasSubstr("forward"));
  EXPECT_THAT(r.table(), Not(HasSubstr("backward")));  // phases no step used are left out
}

// Gradient accumulation: each micro-batch loads, runs forward and backward; every repeat of a
// phase counts (the old chronometer kept only the last one's time).
TEST(Chronometer, PhasesRepeatedWithinAStepAddUp) {
  Chronometer chrono(Device::cpu());
  for (int step = 0; step < 2; ++step) {
    for (int micro = 0; micro < 3; ++micro) {
      chrono.start(Phase::kForward);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      chrono.start(Phase::kBackward);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    chrono.end_step(16);
  }
  const ChronometerReport r = chrono.report();
  EXPECT_GE(r.mean_ms[static_cast<int>(Phase::kForward)], 15.0);
  EXPECT_GE(r.mean_ms[static_cast<int>(Phase::kBackward)], 3.0);
  EXPECT_LT(r.mean_ms[static_cast<int>(Phase::kBackward)], 15.0);
}

TEST(Evaluate, LeavesTheModelInTheModeItFoundItIn) {
  // A frozen teacher (distillation) must stay in evaluation mode; a training model goes on
  // training.
  TrainingFlags flags;
  flags.synthetic = 16;
  flags.num_workers = 0;
  const LabDatasets data = open_dataset(flags);
  auto model =
      nn::make_model({.name = "tinynet", .in_channels = 1, .num_classes = 10}, Device::cpu());
  const auto place = [](const Batch& b) { return b; };
  for (const bool training : {false, true}) {
    model->set_training(training);
    const EvalTally tally = evaluate(*model, data.val, data.val_transform, flags, 0, 1, place);
    EXPECT_GT(tally.samples, 0);
    EXPECT_EQ(model->training(), training);
  }
}

}  // namespace
}  // namespace course::train
