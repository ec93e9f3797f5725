// DeepSpeed configuration files as the labs' flags: a full file against the flags written by
// hand, every refusal naming its key, and --config through CLI11 with the command line winning.
#include "common/train/deepspeed_config.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <tuple>

#include "common/core/error.h"
#include "common/testing/errors_and_files.h"
#include "common/train/lab_flags.h"

namespace course::train {
namespace {

using nlohmann::json;

std::string flags_text(const std::vector<ConfigFlag>& flags) {
  std::string text;
  for (const ConfigFlag& f : flags) {
    if (!f.flag.empty()) text += "--" + f.flag + " " + f.value + " ";
  }
  return text;
}

// Each (file, words) case refused by deepspeed_flags with a message holding the words.
void expect_refusals(const std::vector<std::pair<const char*, const char*>>& cases) {
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

TEST(DeepSpeedConfig, EveryKeyOfTheSlidesBecomesItsFlag) {
  const json config = json::parse(R"({
    "train_batch_size": 64, "train_micro_batch_size_per_gpu": 8,
    "gradient_accumulation_steps": 4, "gradient_clipping": 1.5, "steps_per_print": 20,
    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
    "bf16": {"enabled": true},
    "optimizer": {"type": "OneBitLamb", "params": {"lr": 0.002, "betas": [0.8, 0.99],
                  "eps": 1e-06, "weight_decay": 0.05, "freeze_step": 40, "max_coeff": 8,
                  "min_coeff": 0.02, "coeff_beta": 0.95, "factor_max": 3, "factor_min": 0.6,
                  "factor_threshold": 0.2}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0,
                  "warmup_max_lr": 0.002, "warmup_num_steps": 30, "warmup_type": "linear",
                  "total_num_steps": 500}}})");
  EXPECT_EQ(flags_text(deepspeed_flags(config)),
            "--train-batch-size 64 --batch-size 8 --accumulate 4 --clip-grad-norm 1.5 "
            "--log-every 20 --sharding zero2 --cpu-offload true --reduce-bucket-size 500000000 "
            "--allgather-bucket-size 500000000 --overlap-comm false --reduce-scatter true "
            "--amp true --amp-dtype bf16 --optimizer onebit-lamb --beta1 0.8 --beta2 0.99 "
            "--eps 1e-06 --wd 0.05 --freeze-step 40 --max-coeff 8 --min-coeff 0.02 "
            "--coeff-beta 0.95 --factor-max 3 --factor-min 0.6 --factor-threshold 0.2 "
            "--lr-schedule linear --warmup-type linear "
            "--lr 0.002 --warmup-steps 30 --lr-decay-steps 500 ");
}

// fp16's loss scaler: each key its flag, DeepSpeed's defaults for the missing ones (16, 1000, 2,
// 1), none of them without fp16 enabled.
TEST(DeepSpeedConfig, Fp16sLossScalerKeysBecomeItsFlags) {
  EXPECT_EQ(flags_text(deepspeed_flags(json::parse(R"({"fp16": {"enabled": true,
      "loss_scale": 0, "initial_scale_power": 12, "loss_scale_window": 500, "hysteresis": 1,
      "min_loss_scale": 0.25}})"))),
            "--amp true --amp-dtype f16 --initial-scale-power 12 --loss-scale-window 500 "
            "--hysteresis 1 --min-loss-scale 0.25 --lr-schedule constant --warmup-steps 0 ");
  EXPECT_EQ(flags_text(deepspeed_flags(json::parse(R"({"fp16": {"enabled": true}})"))),
            "--amp true --amp-dtype f16 --initial-scale-power 16 --loss-scale-window 1000 "
            "--hysteresis 2 --min-loss-scale 1 --lr-schedule constant --warmup-steps 0 ");
  EXPECT_EQ(flags_text(deepspeed_flags(json::parse(R"({"fp16": {"enabled": false,
      "hysteresis": 3}})"))),
            "--lr-schedule constant --warmup-steps 0 ");
}

// DeepSpeed's defaults at stage 3: buckets of 5e8 elements reduced, overlapped, by
// reduce-scatter; no all-gather bucket (each block is gathered before its use).
TEST(DeepSpeedConfig, WithoutASchedulerTheRateIsConstantAsInDeepSpeed) {
  const json config = json::parse(R"({"optimizer": {"type": "Adam", "params": {"lr": 1e-3}},
                                      "gradient_clipping": 0, "zero_optimization": {"stage": 3,
                                      "offload_optimizer": {"device": "none"}}})");
  EXPECT_EQ(flags_text(deepspeed_flags(config)),
            "--sharding zero3 --reduce-bucket-size 500000000 --overlap-comm true "
            "--reduce-scatter true --prefetch-bucket-size 50000000 --max-live-parameters "
            "1000000000 --param-persistence-threshold 100000 --optimizer adamw --lr 0.001 "
            "--lr-schedule constant --warmup-steps 0 ");
}

// Stage 3's fetching keys: the file's values at stage 3 (5e7 written as DeepSpeed's files
// write it), said ignored below it, as DeepSpeed ignores them.
TEST(DeepSpeedConfig, Stage3sFetchingKeysAreItsFlags) {
  const json stage3 = json::parse(R"({"zero_optimization": {"stage": 3,
      "stage3_prefetch_bucket_size": 5e7, "stage3_max_live_parameters": 0,
      "stage3_param_persistence_threshold": 0}})");
  EXPECT_EQ(flags_text(deepspeed_flags(stage3)),
            "--sharding zero3 --reduce-bucket-size 500000000 --overlap-comm true "
            "--reduce-scatter true --prefetch-bucket-size 50000000 --max-live-parameters 0 "
            "--param-persistence-threshold 0 --lr-schedule constant --warmup-steps 0 ");
  const json stage2 = json::parse(R"({"zero_optimization": {"stage": 2,
      "stage3_param_persistence_threshold": 1e4}})");
  const ResolvedConfig resolved{.file = "stage2.json", .from_file = deepspeed_flags(stage2)};
  EXPECT_EQ(flags_text(resolved.from_file).find("persistence"), std::string::npos);
  const std::string summary = resolved.summary();
  EXPECT_NE(summary.find("zero_optimization.stage3_param_persistence_threshold 10000: ignored "
                         "below stage 3"),
            std::string::npos)
      << summary;
}

// The slides' two files, as DeepSpeed reads them: every key taken, each missing one at
// DeepSpeed's default, said so.
TEST(DeepSpeedConfig, TheSlidesFilesAsDeepSpeedReadsThem) {
  const auto read = [](const char* name) {
    std::ifstream file(std::string("day4_large_models/configs/") + name);
    EXPECT_TRUE(file.good()) << name;
    ResolvedConfig resolved{.file = name, .from_file = deepspeed_flags(json::parse(file))};
    return resolved;
  };
  const ResolvedConfig zero2 = read("ds_config_zero2.json");
  EXPECT_EQ(flags_text(zero2.from_file),
            "--sharding zero2 --reduce-bucket-size 500000000 --allgather-bucket-size 500000000 "
            "--overlap-comm true --reduce-scatter true --lr-schedule constant --warmup-steps 0 ");
  const std::string zero2_summary = zero2.summary();
  EXPECT_NE(zero2_summary.find("zero_optimization.contiguous_gradients true: always so in the "
                               "lab"),
            std::string::npos)
      << zero2_summary;
  const ResolvedConfig tutorial = read("ds_config.json");
  EXPECT_EQ(flags_text(tutorial.from_file),
            "--train-batch-size 4 --log-every 2000 --wall-clock-breakdown false --optimizer "
            "adamw --beta1 0.8 --beta2 0.999 --eps 1e-08 --wd 3e-07 --lr-schedule constant "
            "--warmup-type log --lr 0.001 --warmup-steps 1000 ");
  const std::string summary = tutorial.summary();
  for (const char* line :
       {"\n  scheduler.params.warmup_type              --warmup-type log (DeepSpeed's default)",
        "\n  optimizer.params.lr 0.001: replaced by scheduler.params.warmup_max_lr, as in "
        "DeepSpeed",
        "\n  scheduler.params.warmup_max_lr            --lr 0.001\n"}) {
    EXPECT_NE(summary.find(line), std::string::npos) << line << " in\n" << summary;
  }
}

// DeepSpeed's batch rule (runtime/config.py), the figures worked by hand.
TEST(DeepSpeedConfig, TheMissingBatchSizeIsDerivedAsDeepSpeedDoes) {
  const auto sizes = [](BatchSizes given, int64_t ranks) {
    const BatchSizes b = complete_batch_sizes(given, ranks);
    return std::to_string(b.train) + "=" + std::to_string(b.micro) + "x" +
           std::to_string(b.accumulation) + "x" + std::to_string(ranks);
  };
  EXPECT_EQ(sizes({.train = 4}, 2), "4=2x1x2");  // the tutorial's file on 2 ranks
  EXPECT_EQ(sizes({.train = 96, .micro = 4}, 8), "96=4x3x8");
  EXPECT_EQ(sizes({.train = 96, .accumulation = 6}, 8), "96=2x6x8");
  EXPECT_EQ(sizes({.micro = 28, .accumulation = 2}, 3), "168=28x2x3");
  EXPECT_EQ(sizes({.micro = 28}, 3), "84=28x1x3");
  EXPECT_EQ(sizes({.train = 48, .micro = 4, .accumulation = 3}, 4), "48=4x3x4");
  const std::vector<std::tuple<BatchSizes, int64_t, const char*>> refused = {
      {{.train = 5}, 2, "train_batch_size 5 does not divide into 2"},
      {{.train = 96, .micro = 5}, 8, "does not divide into 40"},
      {{.train = 48, .micro = 4, .accumulation = 2},
       4,
       "is not train_micro_batch_size_per_gpu (--batch-size) 4 x gradient_accumulation_steps "
       "(--accumulate, or the pipeline's --micro-batches) 2 x 4"},
      {{.accumulation = 2}, 4, "need train_batch_size or train_micro_batch_size_per_gpu"}};
  for (const auto& [given, ranks, named] : refused) {
    const std::string error = testing::error_of([&] { complete_batch_sizes(given, ranks); });
    EXPECT_NE(error.find(named), std::string::npos) << error;
  }
}

// Each file, refused with a message naming what it cannot honour.
TEST(DeepSpeedConfig, RefusesWhatTheLabCannotHonourNamingIt) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"wall_clock_breakdown": 1})", "wall_clock_breakdown must be true or false"},
      {R"({"zero_optimization": {"stage": 1, "overlap_grads": true}})",
       "'zero_optimization.overlap_grads'"},
      {R"({"zero_optimization": {"stage": 2, "contiguous_gradients": "yes"}})",
       "contiguous_gradients must be true or false"},
      {R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": 0}})",
       "reduce_bucket_size must be an integer from 1"},
      {R"({"zero_optimization": {"stage": 2, "allgather_bucket_size": 2.5e-1}})",
       "allgather_bucket_size must be an integer from 1"},
      {R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu",
           "pin_memory": 1}, "offload_param": {"device": "cpu"}}})",
       "offload_optimizer.pin_memory must be true or false"},
      {R"({"optimizer": {"type": "Adam", "params": {"cuda_aware": false}}})",
       "'optimizer.params.cuda_aware'"},
      {R"({"zero_optimization": {"stage": 4}})", "stage must be an integer from 0 to 3, got 4"},
      {R"({"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": -1}})",
       "stage3_prefetch_bucket_size must be an integer from 0"},
      {R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 2.5}})",
       "stage3_param_persistence_threshold must be an integer from 0"},
      {R"({"zero_optimization": {"stage": 3, "stage3_max_live_parameters": "1e9"}})",
       "stage3_max_live_parameters must be an integer from 0"},
      {R"({"zero_optimization": {"stage": 3, "stage3_max_reuse_distance": 1e9}})",
       "'zero_optimization.stage3_max_reuse_distance'"},
      {R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"}}})", "'nvme'"},
      {R"({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}})",
       "offload_param needs stage 3"},
      {R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}})",
       "offload_optimizer and offload_param alike"},
      {R"({"zero_optimization": {"stage": 0, "offload_optimizer": {"device": "cpu"}}})",
       "needs stage 1-3"},
      {R"({"bf16": {"enabled": true}, "fp16": {"enabled": true}})", "both true"},
      {R"({"fp16": {"enabled": true, "loss_scale": 128}})", "fp16.loss_scale"},
      {R"({"fp16": {"enabled": true, "consecutive_hysteresis": true}})",
       "'fp16.consecutive_hysteresis'"},
      {R"({"fp16": {"enabled": true, "hysteresis": 0}})", "fp16.hysteresis must be an integer"},
      {R"({"fp16": {"enabled": true, "initial_scale_power": 128}})",
       "fp16.initial_scale_power must be an integer from -126 to 127"},
      {R"({"bf16": {"enabled": "yes"}})", "bf16.enabled must be true or false"},
      {R"({"optimizer": {"type": "SGD"}})", "'SGD' is not supported"},
      {R"({"optimizer": {"type": "Adam", "params": {"freeze_step": 10}}})",
       "'optimizer.params.freeze_step'"},
      {R"({"optimizer": {"type": "OneBitAdam", "params": {"max_coeff": 10}}})",
       "'optimizer.params.max_coeff'"},
      {R"({"optimizer": {"type": "Adam", "params": {"betas": [0.9, 0.99, 0.9]}}})",
       "[beta1, beta2]"},
      {R"({"optimizer": {"type": "Adam", "params": {"lr": "fast"}}})", "must be a number"},
      {R"({"scheduler": {"type": "OneCycle"}})", "'OneCycle' is not supported"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "cosine"}}})",
       "warmup_type 'cosine' is not supported (log or linear)"},
      {R"({"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 10}}})",
       "WarmupDecayLR needs scheduler.params.total_num_steps"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "linear",
           "warmup_min_lr": 1e-5}}})",
       "warmup_min_lr other than 0"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "linear",
           "total_num_steps": 100}}})",
       "'scheduler.params.total_num_steps'"},
  };
  expect_refusals(cases);
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
  resolve_config(*resolved, app, args);
  EXPECT_EQ(batch, 8);
  EXPECT_FLOAT_EQ(lr, 0.005f);
  EXPECT_TRUE(amp);
  EXPECT_EQ(amp_dtype, "bf16");
  EXPECT_EQ(optimizer, "adamw");
  EXPECT_EQ(schedule, "constant");
  EXPECT_EQ(warmup, 0);
  EXPECT_EQ(resolved->summary(),
            "--config " + path +
                ", each key as the run took it:\n"
                "  train_micro_batch_size_per_gpu            --batch-size 8\n"
                "  bf16.enabled                              --amp\n"
                "  bf16.enabled                              --amp-dtype bf16\n"
                "  optimizer.type                            --optimizer adamw\n"
                "  scheduler                                 --lr-schedule constant (no "
                "scheduler: a constant rate)\n"
                "  scheduler                                 --warmup-steps 0 (no scheduler: no "
                "warm-up)\n"
                "  optimizer.params.lr                       the command line's --lr, not the "
                "file's 0.002");

  std::ofstream(path) << "{\"train_micro_batch_size_per_gpu\": 8,";
  CLI::App broken;
  broken.add_option("--batch-size", batch);
  add_deepspeed_config_flag(broken, std::make_shared<ResolvedConfig>());
  try {
    broken.parse(static_cast<int>(argv.size()) - 2, argv.data() + 2);
    ADD_FAILURE() << "a truncated file was read";
  } catch (const CLI::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

// Every number is checked for its type, range and finiteness, and refused naming the key and
// the value (a conversion of its own would abort or wrap: std::stoi, a float cast to int).
TEST(DeepSpeedConfig, NumbersAreCheckedForTypeRangeAndFiniteness) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"zero_optimization": {"stage": 99999999999}})",
       "zero_optimization.stage must be an integer from 0 to 3, got 99999999999"},
      {R"({"zero_optimization": {"stage": 18446744073709551615}})",
       "zero_optimization.stage must be an integer from 0 to 3, got 18446744073709551615"},
      {R"({"zero_optimization": {"stage": 2.5}})",
       "zero_optimization.stage must be an integer from 0 to 3, got 2.5"},
      {R"({"zero_optimization": {"stage": -1}})", "got -1"},
      {R"({"zero_optimization": {"stage": "2"}})",
       "stage must be an integer from 0 to 3, got \"2\""},
      {R"({"zero_optimization": {"stage": true}})", "got true"},
      {R"({"train_batch_size": 0})", "train_batch_size must be an integer from 1 to"},
      {R"({"train_micro_batch_size_per_gpu": 1e300})", "got 1e+300"},
      {R"({"gradient_accumulation_steps": 2.000001})", "gradient_accumulation_steps must be"},
      {R"({"gradient_clipping": -1})", "gradient_clipping must be a number from 0, got -1"},
      {R"({"gradient_clipping": null})", "gradient_clipping must be a number from 0, got null"},
      {R"({"optimizer": {"type": "Adam", "params": {"betas": [0.9, 1.5]}}})",
       "optimizer.params.betas[1] must be a number from 0 to 1, got 1.5"},
      {R"({"optimizer": {"type": "Adam", "params": {"eps": 0}}})",
       "optimizer.params.eps must be a number above 0, got 0"},
      {R"({"optimizer": {"type": "OneBitAdam", "params": {"freeze_step": -5}}})",
       "optimizer.params.freeze_step must be an integer from 0"},
      {R"({"scheduler": {"type": 7}})", "scheduler.type must be a string, got 7"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": ["linear"]}}})",
       "scheduler.params.warmup_type must be a string"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "linear",
           "warmup_num_steps": 1.5}}})",
       "scheduler.params.warmup_num_steps must be an integer"},
      {R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": 0}}})",
       "zero_optimization.offload_optimizer.device must be a string"},
  };
  expect_refusals(cases);
  // An integer written as DeepSpeed's files write sizes, with an exponent, is an integer.
  EXPECT_EQ(flags_text(deepspeed_flags(json::parse(R"({"train_batch_size": 5e2})"))),
            "--train-batch-size 500 --lr-schedule constant --warmup-steps 0 ");
}

// Random values for every key the reader knows, and files that are not JSON: each ends with
// its flags or one course::Error (never another exception, an abort or, under the sanitisers,
// undefined behaviour).
TEST(DeepSpeedConfig, NoValueOfAnyKeyEndsInAnythingButFlagsOrAMessage) {
  const std::vector<json::json_pointer> keys = {
      json::json_pointer("/train_batch_size"),
      json::json_pointer("/train_micro_batch_size_per_gpu"),
      json::json_pointer("/gradient_accumulation_steps"),
      json::json_pointer("/gradient_clipping"),
      json::json_pointer("/steps_per_print"),
      json::json_pointer("/zero_optimization/stage"),
      json::json_pointer("/zero_optimization/offload_optimizer/device"),
      json::json_pointer("/zero_optimization/offload_param/device"),
      json::json_pointer("/zero_optimization/offload_param/pin_memory"),
      json::json_pointer("/zero_optimization/reduce_bucket_size"),
      json::json_pointer("/zero_optimization/allgather_bucket_size"),
      json::json_pointer("/zero_optimization/overlap_comm"),
      json::json_pointer("/zero_optimization/reduce_scatter"),
      json::json_pointer("/zero_optimization/contiguous_gradients"),
      json::json_pointer("/wall_clock_breakdown"),
      json::json_pointer("/optimizer/params/cuda_aware"),
      json::json_pointer("/optimizer/params/comm_backend_name"),
      json::json_pointer("/bf16/enabled"),
      json::json_pointer("/fp16/enabled"),
      json::json_pointer("/fp16/loss_scale"),
      json::json_pointer("/fp16/initial_scale_power"),
      json::json_pointer("/fp16/hysteresis"),
      json::json_pointer("/fp16/min_loss_scale"),
      json::json_pointer("/optimizer/type"),
      json::json_pointer("/optimizer/params/lr"),
      json::json_pointer("/optimizer/params/betas"),
      json::json_pointer("/optimizer/params/eps"),
      json::json_pointer("/optimizer/params/weight_decay"),
      json::json_pointer("/optimizer/params/freeze_step"),
      json::json_pointer("/optimizer/params/max_coeff"),
      json::json_pointer("/optimizer/params/factor_threshold"),
      json::json_pointer("/scheduler/type"),
      json::json_pointer("/scheduler/params/warmup_min_lr"),
      json::json_pointer("/scheduler/params/warmup_max_lr"),
      json::json_pointer("/scheduler/params/warmup_num_steps"),
      json::json_pointer("/scheduler/params/warmup_type"),
      json::json_pointer("/scheduler/params/total_num_steps")};
  const std::vector<json> values = {nullptr,
                                    true,
                                    false,
                                    0,
                                    1,
                                    -1,
                                    3,
                                    2.5,
                                    -0.0,
                                    1e308,
                                    -1e308,
                                    5e8,
                                    9223372036854775807LL,
                                    18446744073709551615ULL,
                                    std::numeric_limits<int64_t>::min(),
                                    "",
                                    "cpu",
                                    "linear",
                                    "OneBitLamb",
                                    "WarmupDecayLR",
                                    json::array(),
                                    json::array({0.9, 0.99}),
                                    json::array({"a", 1}),
                                    json::object(),
                                    json({{"device", "cpu"}})};
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 3000; ++trial) {
    json config = {{"optimizer", {{"type", "OneBitAdam"}}},
                   {"scheduler", {{"type", "WarmupDecayLR"}}}};
    const int changed = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < changed; ++k)
      config[keys[rng() % keys.size()]] = values[rng() % values.size()];
    try {
      deepspeed_flags(config);
    } catch (const Error&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << config.dump() << " ended in " << e.what();
    }
  }
}

// A file the JSON library cannot read (malformed, a number past a double's range, nested past
// reason) is one message naming the file and where the library stopped.
TEST(DeepSpeedConfig, AFileThatIsNotJsonIsOneMessageNamingTheFileAndTheKey) {
  const std::string path = ::testing::TempDir() + "/ds_broken.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"gradient_clipping": -1e400})", "not valid JSON (at the key 'gradient_clipping'): "},
      {R"({"zero_optimization": {"stage": 2,)", "not valid JSON (at the key 'stage'): "},
      {"{\"steps_per_print\": \"\xff\xfe\"}", "not valid JSON (at the key 'steps_per_print'): "},
      {"", "not valid JSON: [json.exception.parse_error"},
      {std::string(100000, '['), "not valid JSON: [json.exception.parse_error"},
  };
  for (const auto& [text, named] : cases) {
    std::ofstream(path, std::ios::trunc) << text;
    CLI::App app;
    int64_t clip = 0;
    app.add_option("--clip-grad-norm", clip);
    auto resolved = std::make_shared<ResolvedConfig>();
    resolved->file = path;
    add_deepspeed_config_flag(app, resolved);
    const std::vector<const char*> argv = {"lab", "--config", path.c_str()};
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
      ADD_FAILURE() << "read " << text.substr(0, 60);
    } catch (const CLI::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--config " + path + ": " + named), std::string::npos)
          << e.what();
    }
  }
  std::remove(path.c_str());
}

// The command line's -b is --batch-size given: the summary says the file's value was replaced.
TEST(DeepSpeedConfig, AShortFlagOnTheCommandLineOverridesTheFile) {
  const std::string path = ::testing::TempDir() + "/ds_short.json";
  std::ofstream(path) << R"({"train_micro_batch_size_per_gpu": 8, "steps_per_print": 3})";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"lab", "-b", "28", "--config", path},
        std::vector<std::string>{"lab", "-b28", "--config", path},
        std::vector<std::string>{"lab", "--batch-size=28", "--config", path}}) {
    CLI::App app;
    int64_t batch = 1, log_every = 1;
    std::string schedule;
    int64_t warmup = 0;
    app.add_option("-b,--batch-size", batch);
    app.add_option("--log-every", log_every);
    app.add_option("--lr-schedule", schedule);
    app.add_option("--warmup-steps", warmup);
    auto resolved = std::make_shared<ResolvedConfig>();
    resolved->file = path;
    add_deepspeed_config_flag(app, resolved);
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    app.parse(static_cast<int>(argv.size()), argv.data());
    resolve_config(*resolved, app, args);
    EXPECT_EQ(batch, 28) << args[1];
    EXPECT_EQ(log_every, 3);
    const std::string summary = resolved->summary();
    EXPECT_NE(summary.find("\n  steps_per_print                           --log-every 3\n"),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find("\n  train_micro_batch_size_per_gpu            the command line's "
                           "--batch-size, not the file's 8"),
              std::string::npos)
        << args[1] << ": " << summary;
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
