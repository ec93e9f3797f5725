// DeepSpeed configuration files as the labs' flags: a full file against the flags written by
// hand, every refusal naming its key, and --config through CLI11 with the command line winning.
#include "common/train/deepspeed_config.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/core/error.h"
#include "common/train/lab_flags.h"

namespace course::train {
namespace {

using nlohmann::json;

std::string flags_text(const std::vector<ConfigFlag>& flags) {
  std::string text;
  for (const ConfigFlag& f : flags) text += "--" + f.flag + " " + f.value + " ";
  return text;
}

TEST(DeepSpeedConfig, EveryKeyOfTheSlidesBecomesItsFlag) {
  const json config = json::parse(R"({
    "train_batch_size": 64, "train_micro_batch_size_per_gpu": 8,
    "gradient_accumulation_steps": 4, "gradient_clipping": 1.5, "steps_per_print": 20,
    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
    "bf16": {"enabled": true},
    "optimizer": {"type": "OneBitLamb", "params": {"lr": 0.002, "betas": [0.8, 0.99],
                  "eps": 1e-06, "weight_decay": 0.05, "freeze_step": 40}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0,
                  "warmup_max_lr": 0.002, "warmup_num_steps": 30, "warmup_type": "linear",
                  "total_num_steps": 500}}})");
  EXPECT_EQ(flags_text(deepspeed_flags(config)),
            "--train-batch-size 64 --batch-size 8 --accumulate 4 --clip-grad-norm 1.5 "
            "--log-every 20 --sharding zero2 --cpu-offload true --amp true --amp-dtype bf16 "
            "--optimizer onebit-lamb --lr 0.002 --beta1 0.8 --beta2 0.99 --eps 1e-06 --wd 0.05 "
            "--freeze-step 40 --lr-schedule linear --warmup-steps 30 --lr-decay-steps 500 ");
}

TEST(DeepSpeedConfig, WithoutASchedulerTheRateIsConstantAsInDeepSpeed) {
  const json config = json::parse(R"({"optimizer": {"type": "Adam", "params": {"lr": 1e-3}},
                                      "gradient_clipping": 0, "zero_optimization": {"stage": 3,
                                      "offload_optimizer": {"device": "none"}}})");
  EXPECT_EQ(flags_text(deepspeed_flags(config)),
            "--sharding zero3 --optimizer adamw --lr 0.001 --lr-schedule constant "
            "--warmup-steps 0 ");
}

// Each file, refused with a message naming what it cannot honour.
TEST(DeepSpeedConfig, RefusesWhatTheLabCannotHonourNamingIt) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"wall_clock_breakdown": true})", "'wall_clock_breakdown'"},
      {R"({"zero_optimization": {"stage": 1, "overlap_comm": true}})",
       "'zero_optimization.overlap_comm'"},
      {R"({"zero_optimization": {"stage": 4}})", "stage 4"},
      {R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"}}})", "'nvme'"},
      {R"({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}})",
       "offload_param needs stage 3"},
      {R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}})",
       "offload_optimizer and offload_param alike"},
      {R"({"zero_optimization": {"stage": 0, "offload_optimizer": {"device": "cpu"}}})",
       "needs stage 1-3"},
      {R"({"bf16": {"enabled": true}, "fp16": {"enabled": true}})", "both true"},
      {R"({"fp16": {"enabled": true, "loss_scale": 128}})", "fp16.loss_scale"},
      {R"({"fp16": {"enabled": true, "initial_scale_power": 16}})", "'fp16.initial_scale_power'"},
      {R"({"bf16": {"enabled": "yes"}})", "bf16.enabled must be true or false"},
      {R"({"optimizer": {"type": "SGD"}})", "'SGD' is not supported"},
      {R"({"optimizer": {"type": "Adam", "params": {"freeze_step": 10}}})",
       "'optimizer.params.freeze_step'"},
      {R"({"optimizer": {"type": "Adam", "params": {"betas": [0.9, 0.99, 0.9]}}})",
       "[beta1, beta2]"},
      {R"({"optimizer": {"type": "Adam", "params": {"lr": "fast"}}})", "must be a number"},
      {R"({"scheduler": {"type": "OneCycle"}})", "'OneCycle' is not supported"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}})",
       "\"warmup_type\": \"linear\""},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "log"}}})",
       "\"warmup_type\": \"linear\""},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "linear",
           "warmup_min_lr": 1e-5}}})",
       "warmup_min_lr other than 0"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "linear",
           "total_num_steps": 100}}})",
       "'scheduler.params.total_num_steps'"},
      {R"({"optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "scheduler": {"type":
           "WarmupLR", "params": {"warmup_type": "linear", "warmup_max_lr": 0.002}}})",
       "disagree"},
  };
  for (const auto& [text, named] : cases) {
    try {
      deepspeed_flags(json::parse(text));
      ADD_FAILURE() << "took " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos)
          << text << " was refused with: " << e.what();
    }
  }
}

// --config through CLI11: the file's values where the command line gave none, the command line's
// where it did; a file that is not JSON is one clear error.
TEST(DeepSpeedConfig, TheCommandLineWinsOverTheFile) {
  const std::string path = ::testing::TempDir() + "/ds_config.json";
  std::ofstream(path) << R"({"train_micro_batch_size_per_gpu": 8, "bf16": {"enabled": true},
                             "optimizer": {"type": "AdamW", "params": {"lr": 0.002}}})";
  CLI::App app;
  int64_t batch = 1;
  float lr = 0.1f;
  bool amp = false;
  std::string amp_dtype = "f32", optimizer = "sgd", schedule = "cosine";
  int64_t warmup = 50;
  app.add_option("--batch-size", batch);
  app.add_option("--lr", lr);
  app.add_flag("--amp", amp);
  app.add_option("--amp-dtype", amp_dtype);
  app.add_option("--optimizer", optimizer);
  app.add_option("--lr-schedule", schedule);
  app.add_option("--warmup-steps", warmup);
  auto resolved = std::make_shared<ResolvedConfig>();
  add_deepspeed_config_flag(app, resolved);
  const std::vector<std::string> args = {"lab", "--lr", "0.005", "--config", path};
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  resolved->file = path;
  resolve_config(*resolved, args);
  EXPECT_EQ(batch, 8);
  EXPECT_FLOAT_EQ(lr, 0.005f);
  EXPECT_TRUE(amp);
  EXPECT_EQ(amp_dtype, "bf16");
  EXPECT_EQ(optimizer, "adamw");
  EXPECT_EQ(schedule, "constant");
  EXPECT_EQ(warmup, 0);
  EXPECT_EQ(resolved->summary(), "--config " + path +
                                     ": --batch-size 8 --amp --amp-dtype bf16 --optimizer adamw "
                                     "--lr-schedule constant --warmup-steps 0 (the command "
                                     "line's --lr instead of the file's)");

  std::ofstream(path) << "{\"train_micro_batch_size_per_gpu\": 8,";
  CLI::App broken;
  broken.add_option("--batch-size", batch);
  add_deepspeed_config_flag(broken, std::make_shared<ResolvedConfig>());
  try {
    broken.parse(static_cast<int>(argv.size()) - 2, argv.data() + 2);
    ADD_FAILURE() << "a truncated file was read";
  } catch (const CLI::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("not JSON"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

// A file's optimizer.params reach the optimizer through the run's flags: its lr and weight decay,
// with the command line's momentum, for the kind the lab names.
TEST(DeepSpeedConfig, TheOptimizerTakesTheRunsRateMomentumAndDecay) {
  const std::string path = ::testing::TempDir() + "/ds_optimizer.json";
  std::ofstream(path) << R"({"optimizer": {"type": "AdamW",
                                          "params": {"lr": 0.002, "weight_decay": 0.05}}})";
  CLI::App app;
  RunFlags run;
  add_run_flags(app, run, {"smallnet"});
  add_deepspeed_config_flag(app, std::make_shared<ResolvedConfig>());
  const std::vector<std::string> args = {"lab", "--mom", "0.7", "--config", path};
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::string optimizer = "sgd";
  app.add_option("--optimizer", optimizer);
  app.parse(static_cast<int>(argv.size()), argv.data());
  const optim::OptimizerFlags flags = optimizer_flags(run, optim::OptimizerKind::kAdamW);
  EXPECT_EQ(optimizer, "adamw");
  EXPECT_EQ(flags.kind, optim::OptimizerKind::kAdamW);
  EXPECT_FLOAT_EQ(flags.lr, 0.002f);
  EXPECT_FLOAT_EQ(flags.momentum, 0.7f);
  EXPECT_FLOAT_EQ(flags.weight_decay, 0.05f);
  EXPECT_EQ(optimizer_flags(run).kind, optim::OptimizerKind::kSgd);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace course::train
