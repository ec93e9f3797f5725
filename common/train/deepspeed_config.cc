// DeepSpeed's configuration keys as the course's flags, and DeepSpeed's batch rule; --config's
// reading through CLI11 is in deepspeed_config_file.cc.
#include "common/train/deepspeed_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/core/error.h"

namespace course::train {

namespace {

using nlohmann::json;

constexpr int64_t kLargestCount = int64_t{1} << 40;
constexpr double kUnbounded = std::numeric_limits<double>::max();

[[noreturn]] void refuse_value(const std::string& key, const std::string& wanted,
                               const json& value) {
  COURSE_FAIL("DeepSpeed configuration: ", key, " must be ", wanted, ", got ", value.dump());
}

// `value` as an integer from `low` to `high`: a JSON integer, or a number with an exponent that
// is one (5e8, as DeepSpeed's files write bucket sizes); a fraction, another type or a value out
// of the range is refused naming the key.
int64_t integer_in(const json& value, const std::string& key, int64_t low, int64_t high) {
  const std::string wanted = detail::concat("an integer from ", low, " to ", high);
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(high) || static_cast<int64_t>(v) < low) {
      refuse_value(key, wanted, value);
    }
  } else if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if (v < low || v > high) refuse_value(key, wanted, value);
  } else if (value.is_number_float()) {
    const double v = value.get<double>();
    // (the range checked before the conversion, which is undefined outside int64_t's)
    if (!(v >= static_cast<double>(low) && v <= static_cast<double>(high)) || v != std::floor(v))
      refuse_value(key, wanted, value);
    return static_cast<int64_t>(v);
  } else {
    refuse_value(key, wanted, value);
  }
  return value.get<int64_t>();
}

// `value` as a finite number from `low` to `high` (above `low` when `low_excluded`).
double number_in(const json& value, const std::string& key, double low, double high,
                 bool low_excluded = false) {
  const double v = value.is_number() ? value.get<double>() : std::nan("");
  const bool in_range = low_excluded ? v > low : v >= low;
  if (!std::isfinite(v) || !in_range || v > high) {
    const std::string from = detail::concat("a number ", low_excluded ? "above " : "from ", low);
    refuse_value(key, high == kUnbounded ? from : detail::concat(from, " to ", high), value);
  }
  return v;
}

// A number as the flag would be typed.
std::string as_flag(double value) {
  std::ostringstream text;
  text.precision(9);
  text << value;
  return text.str();
}

// `object[key]` as a string, or `fallback` when absent; another type is refused naming it.
std::string string_in(const json& object, const std::string& key, const std::string& where,
                      const std::string& fallback) {
  if (!object.contains(key)) return fallback;
  if (!object[key].is_string()) refuse_value(where + "." + key, "a string", object[key]);
  return object[key].get<std::string>();
}

bool flag_value(const json& value, const std::string& key) {
  COURSE_CHECK(value.is_boolean(), "DeepSpeed configuration: ", key, " must be true or false, got ",
               value.dump());
  return value.get<bool>();
}

// Refuses every key of `object` (named `where`) outside `known`.
void only_keys(const json& object, const std::string& where,
               const std::vector<std::string>& known) {
  COURSE_CHECK(object.is_object(), "DeepSpeed configuration: ", where, " must be an object, got ",
               object.dump());
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string names;
    for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
    COURSE_FAIL("DeepSpeed configuration: unknown or unsupported key '",
                where.empty() ? key : where + "." + key, "' (the lab reads ", names, ")");
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// A key's entry: `flag` set to `value`, from `key`.
ConfigFlag entry(const std::string& key, const std::string& flag, const std::string& value,
                 const std::string& note = "") {
  return {.flag = flag, .value = value, .key = key, .note = note};
}
constexpr const char* kDefault = "DeepSpeed's default";

// {"device": "cpu"} or {"device": "none"}, with pin_memory: whether it offloads.
bool offloads(const json& object, const std::string& where, std::vector<ConfigFlag>& flags) {
  only_keys(object, where, {"device", "pin_memory"});
  const std::string device = string_in(object, "device", where, "none");
  COURSE_CHECK(device == "cpu" || device == "none", "DeepSpeed configuration: ", where, ".device '",
               device, "' is not supported (cpu or none: the lab has no NVMe tier)");
  if (object.contains("pin_memory")) {
    flag_value(object["pin_memory"], where + ".pin_memory");
    flags.push_back(entry(where + ".pin_memory", "", object["pin_memory"].dump(),
                          "ignored: the offloaded shards' host buffers are the course "
                          "allocator's, page-locked on a GPU whatever the file says"));
  }
  return device == "cpu";
}

void map_offload(const json& zero, int64_t stage, std::vector<ConfigFlag>& flags) {
  const bool optimizer_offloaded =
      zero.contains("offload_optimizer") &&
      offloads(zero["offload_optimizer"], "zero_optimization.offload_optimizer", flags);
  const bool params_offloaded =
      zero.contains("offload_param") &&
      offloads(zero["offload_param"], "zero_optimization.offload_param", flags);
  COURSE_CHECK(!params_offloaded || stage == 3,
               "DeepSpeed configuration: zero_optimization.offload_param needs stage 3 (only "
               "ZeRO-3 shards the parameters)");
  COURSE_CHECK(stage != 3 || params_offloaded == optimizer_offloaded,
               "DeepSpeed configuration: at stage 3 the lab offloads the parameter shards with "
               "the optimizer's state (--cpu-offload): set offload_optimizer and offload_param "
               "alike");
  COURSE_CHECK(!optimizer_offloaded || stage >= 1,
               "DeepSpeed configuration: zero_optimization.offload_optimizer needs stage 1-3 "
               "(stage 0 has no shards to offload)");
  if (optimizer_offloaded) {
    flags.push_back(entry("zero_optimization.offload_optimizer", "cpu-offload", "true"));
  }
}

// The bucket sizes, in elements: the file's, or DeepSpeed's 5e8 where ZeRO uses them.
void map_buckets(const json& zero, int64_t stage, std::vector<ConfigFlag>& flags) {
  constexpr int64_t kDeepSpeedBucket = 500'000'000;
  const auto bucket = [&](const char* key, const char* flag, bool used) {
    const std::string where = std::string("zero_optimization.") + key;
    if (!zero.contains(key)) {
      if (used) flags.push_back(entry(where, flag, std::to_string(kDeepSpeedBucket), kDefault));
      return;
    }
    const std::string elements = std::to_string(integer_in(zero[key], where, 1, kLargestCount));
    flags.push_back(used ? entry(where, flag, elements)
                         : entry(where, "", elements,
                                 stage == 3 ? "ignored at stage 3, as in DeepSpeed: each block "
                                              "is gathered before its use"
                                            : "ignored at stage 0, as in DeepSpeed: nothing "
                                              "is gathered after the step"));
  };
  // Stage 0 reduces in DDP's buckets, of reduce_bucket_size when the file gives it.
  bucket("reduce_bucket_size", "reduce-bucket-size",
         stage >= 1 || zero.contains("reduce_bucket_size"));
  bucket("allgather_bucket_size", "allgather-bucket-size", stage == 1 || stage == 2);
}

// overlap_comm (DeepSpeed's default: at stage 3 only), reduce_scatter (default true) and
// contiguous_gradients (always so in the lab).
void map_zero_switches(const json& zero, int64_t stage, std::vector<ConfigFlag>& flags) {
  const auto on_off = [&](const char* key, const char* flag, bool fallback) {
    const std::string where = std::string("zero_optimization.") + key;
    const bool given = zero.contains(key);
    const bool on = given ? flag_value(zero[key], where) : fallback;
    if (stage == 0) {
      if (given) {
        flags.push_back(entry(where, "", zero[key].dump(),
                              "ignored at stage 0, as in DeepSpeed: DDP overlaps its buckets"));
      }
      return;
    }
    flags.push_back(entry(where, flag, on ? "true" : "false", given ? "" : kDefault));
  };
  on_off("overlap_comm", "overlap-comm", stage == 3);
  on_off("reduce_scatter", "reduce-scatter", true);
  if (zero.contains("contiguous_gradients")) {
    const bool contiguous =
        flag_value(zero["contiguous_gradients"], "zero_optimization.contiguous_gradients");
    flags.push_back(entry("zero_optimization.contiguous_gradients", "",
                          zero["contiguous_gradients"].dump(),
                          contiguous ? "always so in the lab: a block's gradients are one flat "
                                       "buffer, reduced from where backward writes them"
                                     : "ignored: the lab's gradients are always one flat buffer "
                                       "per block (contiguous_gradients true)"));
  }
}

// Stage 3's parameter fetching, DeepSpeed's defaults where a key is missing (a prefetch of 5e7
// elements, at most 1e9 live, tensors of up to 1e5 persistent); below stage 3 a key is said
// ignored, as DeepSpeed ignores it.
void map_stage3(const json& zero, int64_t stage, std::vector<ConfigFlag>& flags) {
  const auto count = [&](const char* key, const char* flag, int64_t fallback) {
    const std::string where = std::string("zero_optimization.") + key;
    const bool given = zero.contains(key);
    const int64_t value = given ? integer_in(zero[key], where, 0, kLargestCount) : fallback;
    if (stage == 3) {
      flags.push_back(entry(where, flag, std::to_string(value), given ? "" : kDefault));
    } else if (given) {
      flags.push_back(entry(where, "", std::to_string(value),
                            "ignored below stage 3, as in DeepSpeed: no parameter is freed "
                            "between uses"));
    }
  };
  count("stage3_prefetch_bucket_size", "prefetch-bucket-size", 50'000'000);
  count("stage3_max_live_parameters", "max-live-parameters", 1'000'000'000);
  count("stage3_param_persistence_threshold", "param-persistence-threshold", 100'000);
}

void map_zero(const json& zero, std::vector<ConfigFlag>& flags) {
  only_keys(zero, "zero_optimization",
            {"stage", "offload_optimizer", "offload_param", "contiguous_gradients", "overlap_comm",
             "reduce_scatter", "reduce_bucket_size", "allgather_bucket_size",
             "stage3_prefetch_bucket_size", "stage3_max_live_parameters",
             "stage3_param_persistence_threshold"});
  const int64_t stage =
      zero.contains("stage") ? integer_in(zero["stage"], "zero_optimization.stage", 0, 3) : 0;
  static const char* const kSharding[] = {"none", "zero1", "zero2", "zero3"};
  flags.push_back(entry("zero_optimization.stage", "sharding", kSharding[stage],
                        zero.contains("stage") ? "" : kDefault));
  map_offload(zero, stage, flags);
  map_buckets(zero, stage, flags);
  map_zero_switches(zero, stage, flags);
  map_stage3(zero, stage, flags);
}

// fp16's dynamic loss scaler (DeepSpeed's DynamicLossScaler): each key its flag, DeepSpeed's
// default where a key is missing (the lab's own defaults are PyTorch's GradScaler's).
void map_loss_scaler(const json& fp16, std::vector<ConfigFlag>& flags) {
  const auto integer = [&](const char* key, const char* flag, int64_t low, int64_t high,
                           int64_t fallback) {
    const std::string where = std::string("fp16.") + key;
    const bool given = fp16.contains(key);
    const int64_t value = given ? integer_in(fp16[key], where, low, high) : fallback;
    flags.push_back(entry(where, flag, std::to_string(value), given ? "" : kDefault));
  };
  integer("initial_scale_power", "initial-scale-power", -126, 127, 16);
  integer("loss_scale_window", "loss-scale-window", 1, kLargestCount, 1000);
  integer("hysteresis", "hysteresis", 1, kLargestCount, 2);
  const bool given = fp16.contains("min_loss_scale");
  const std::string minimum =
      given ? as_flag(number_in(fp16["min_loss_scale"], "fp16.min_loss_scale", 0, kUnbounded))
            : "1";
  flags.push_back(entry("fp16.min_loss_scale", "min-loss-scale", minimum, given ? "" : kDefault));
}

void map_precision(const json& config, std::vector<ConfigFlag>& flags) {
  bool bf16 = false, fp16 = false;
  if (config.contains("bf16")) {
    only_keys(config["bf16"], "bf16", {"enabled"});
    bf16 = flag_value(config["bf16"].value("enabled", json(false)), "bf16.enabled");
  }
  if (config.contains("fp16")) {
    const json& fp16_config = config["fp16"];
    only_keys(fp16_config, "fp16",
              {"enabled", "loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis",
               "min_loss_scale"});
    fp16 = flag_value(fp16_config.value("enabled", json(false)), "fp16.enabled");
    COURSE_CHECK(!fp16_config.contains("loss_scale") ||
                     number_in(fp16_config["loss_scale"], "fp16.loss_scale", 0, kUnbounded) == 0,
                 "DeepSpeed configuration: fp16.loss_scale other than 0 (dynamic) is not "
                 "supported: the course's loss scaler is dynamic");
  }
  COURSE_CHECK(!(bf16 && fp16),
               "DeepSpeed configuration: bf16.enabled and fp16.enabled are both true");
  if (bf16 || fp16) {
    const std::string key = bf16 ? "bf16.enabled" : "fp16.enabled";
    flags.push_back(entry(key, "amp", "true"));
    flags.push_back(entry(key, "amp-dtype", bf16 ? "bf16" : "f16"));
  }
  if (fp16) map_loss_scaler(config["fp16"], flags);
}

// The 1-bit optimizers' keys that choose how to communicate: the course's communicator chooses.
void note_onebit_transport(const json& params, std::vector<ConfigFlag>& flags) {
  static const std::vector<std::pair<std::string, std::string>> kIgnored = {
      {"cuda_aware",
       "ignored: the course's communicator moves device buffers itself (NCCL on GPUs, "
       "staged through host memory otherwise)"},
      {"comm_backend_name",
       "ignored: the course's communicator is NCCL on GPUs and MPI otherwise, chosen by "
       "--device"}};
  for (const auto& [key, why] : kIgnored) {
    if (params.contains(key)) {
      flags.push_back(entry("optimizer.params." + key, "", params[key].dump(), why));
    }
  }
}

// OnebitLamb's coefficient clamps and factor: each key its flag of the same name (their ranges
// the optimizer's own check).
constexpr const char* kOnebitLambKeys[] = {"max_coeff",  "min_coeff",  "coeff_beta",
                                           "factor_max", "factor_min", "factor_threshold"};

void map_onebit_lamb_params(const json& params, std::vector<ConfigFlag>& flags) {
  for (const std::string key : kOnebitLambKeys) {
    if (!params.contains(key)) continue;
    std::string flag = key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    const std::string where = "optimizer.params." + key;
    flags.push_back(entry(where, flag, as_flag(number_in(params[key], where, 0, kUnbounded))));
  }
}

void map_optimizer_params(const json& params, const std::string& kind,
                          std::vector<ConfigFlag>& flags) {
  const bool onebit = kind.starts_with("onebit"), lamb = kind == "onebit-lamb";
  std::vector<std::string> known = {"lr", "betas", "eps", "weight_decay"};
  if (onebit) known.insert(known.end(), {"freeze_step", "cuda_aware", "comm_backend_name"});
  if (lamb) known.insert(known.end(), std::begin(kOnebitLambKeys), std::end(kOnebitLambKeys));
  only_keys(params, "optimizer.params", known);
  const auto number = [&](const char* key, const char* flag, double low, bool low_excluded) {
    if (!params.contains(key)) return;
    const std::string where = std::string("optimizer.params.") + key;
    flags.push_back(
        entry(where, flag, as_flag(number_in(params[key], where, low, kUnbounded, low_excluded))));
  };
  number("lr", "lr", 0, false);
  if (params.contains("betas")) {
    const json& betas = params["betas"];
    COURSE_CHECK(betas.is_array() && betas.size() == 2,
                 "DeepSpeed configuration: optimizer.params.betas must be [beta1, beta2], got ",
                 betas.dump());
    for (int i = 0; i < 2; ++i) {
      const std::string where = detail::concat("optimizer.params.betas[", i, "]");
      flags.push_back(
          entry(where, i == 0 ? "beta1" : "beta2", as_flag(number_in(betas[i], where, 0, 1))));
    }
  }
  number("eps", "eps", 0, /*low_excluded=*/true);
  number("weight_decay", "wd", 0, false);
  if (params.contains("freeze_step")) {
    const int64_t steps =
        integer_in(params["freeze_step"], "optimizer.params.freeze_step", 0, kLargestCount);
    flags.push_back(entry("optimizer.params.freeze_step", "freeze-step", std::to_string(steps)));
  }
  if (onebit) note_onebit_transport(params, flags);
  if (lamb) map_onebit_lamb_params(params, flags);
}

void map_optimizer(const json& optimizer, std::vector<ConfigFlag>& flags) {
  only_keys(optimizer, "optimizer", {"type", "params"});
  COURSE_CHECK(optimizer.contains("type") && optimizer["type"].is_string(),
               "DeepSpeed configuration: optimizer.type must name the optimizer");
  const std::string type = optimizer["type"].get<std::string>();
  static const std::vector<std::pair<std::string, std::string>> kTypes = {
      {"adam", "adamw"},
      {"adamw", "adamw"},
      {"lamb", "lamb"},
      {"onebitadam", "onebit-adam"},
      {"onebitlamb", "onebit-lamb"}};
  const auto found = std::find_if(kTypes.begin(), kTypes.end(),
                                  [&](const auto& t) { return t.first == lower(type); });
  COURSE_CHECK(found != kTypes.end(), "DeepSpeed configuration: optimizer.type '", type,
               "' is not supported (Adam, AdamW, Lamb, OneBitAdam or OneBitLamb)");
  flags.push_back(entry("optimizer.type", "optimizer", found->second));
  if (optimizer.contains("params")) {
    map_optimizer_params(optimizer["params"], found->second, flags);
  }
}

// DeepSpeed's scheduler sets the rate: its warmup_max_lr (given or 0.001) replaces the
// optimizer's lr, which is then said to be unused.
void map_peak_rate(const json& params, std::vector<ConfigFlag>& flags) {
  const bool given = params.contains("warmup_max_lr");
  const std::string lr = given ? as_flag(number_in(params["warmup_max_lr"],
                                                   "scheduler.params.warmup_max_lr", 0, kUnbounded))
                               : "0.001";
  const auto optimizers =
      std::find_if(flags.begin(), flags.end(), [](const ConfigFlag& f) { return f.flag == "lr"; });
  if (optimizers != flags.end()) {
    optimizers->note = "replaced by scheduler.params.warmup_max_lr, as in DeepSpeed";
    optimizers->flag.clear();
  }
  flags.push_back(entry("scheduler.params.warmup_max_lr", "lr", lr, given ? "" : kDefault));
}

void map_scheduler(const json& config, std::vector<ConfigFlag>& flags) {
  if (!config.contains("scheduler")) {  // DeepSpeed without a scheduler: the optimizer's lr
    flags.push_back(entry("scheduler", "lr-schedule", "constant", "no scheduler: a constant rate"));
    flags.push_back(entry("scheduler", "warmup-steps", "0", "no scheduler: no warm-up"));
    return;
  }
  const json& scheduler = config["scheduler"];
  only_keys(scheduler, "scheduler", {"type", "params"});
  const std::string type = string_in(scheduler, "type", "scheduler", "");
  COURSE_CHECK(type == "WarmupLR" || type == "WarmupDecayLR",
               "DeepSpeed configuration: scheduler.type '", type,
               "' is not supported (WarmupLR or WarmupDecayLR)");
  const bool decays = type == "WarmupDecayLR";
  flags.push_back(entry("scheduler.type", "lr-schedule", decays ? "linear" : "constant"));
  const json params = scheduler.contains("params") ? scheduler["params"] : json::object();
  std::vector<std::string> known = {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps",
                                    "warmup_type"};
  if (decays) known.push_back("total_num_steps");
  only_keys(params, "scheduler.params", known);
  COURSE_CHECK(!params.contains("warmup_min_lr") ||
                   (params["warmup_min_lr"].is_number() && params["warmup_min_lr"] == 0),
               "DeepSpeed configuration: scheduler.params.warmup_min_lr other than 0 is not "
               "supported (the lab warms up from 0)");
  const std::string shape = string_in(params, "warmup_type", "scheduler.params", "log");
  COURSE_CHECK(shape == "linear" || shape == "log",
               "DeepSpeed configuration: scheduler.params."
               "warmup_type '",
               shape, "' is not supported (log or linear)");
  flags.push_back(entry("scheduler.params.warmup_type", "warmup-type", shape,
                        params.contains("warmup_type") ? "" : kDefault));
  map_peak_rate(params, flags);
  const auto steps = [&](const char* key, int64_t low) {
    return std::to_string(
        integer_in(params[key], std::string("scheduler.params.") + key, low, kLargestCount));
  };
  const bool warmup_given = params.contains("warmup_num_steps");
  flags.push_back(entry("scheduler.params.warmup_num_steps", "warmup-steps",
                        warmup_given ? steps("warmup_num_steps", 0) : "1000",
                        warmup_given ? "" : kDefault));
  COURSE_CHECK(!decays || params.contains("total_num_steps"),
               "DeepSpeed configuration: WarmupDecayLR needs scheduler.params.total_num_steps "
               "(DeepSpeed has no default for it)");
  if (decays) {
    flags.push_back(
        entry("scheduler.params.total_num_steps", "lr-decay-steps", steps("total_num_steps", 1)));
  }
}

}  // namespace

std::vector<ConfigFlag> deepspeed_flags(const nlohmann::json& config) {
  only_keys(config, "",
            {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
             "gradient_clipping", "steps_per_print", "wall_clock_breakdown", "zero_optimization",
             "bf16", "fp16", "optimizer", "scheduler"});
  std::vector<ConfigFlag> flags;
  const auto count = [&](const char* key, const char* flag) {
    if (config.contains(key)) {
      flags.push_back(
          entry(key, flag, std::to_string(integer_in(config[key], key, 1, kLargestCount))));
    }
  };
  count("train_batch_size", "train-batch-size");
  count("train_micro_batch_size_per_gpu", "batch-size");
  count("gradient_accumulation_steps", "accumulate");
  if (config.contains("gradient_clipping")) {
    const double norm = number_in(config["gradient_clipping"], "gradient_clipping", 0, kUnbounded);
    flags.push_back(norm != 0 ? entry("gradient_clipping", "clip-grad-norm", as_flag(norm))
                              : entry("gradient_clipping", "", "0", "0: no clipping"));
  }
  count("steps_per_print", "log-every");
  if (config.contains("wall_clock_breakdown")) {
    const bool breakdown = flag_value(config["wall_clock_breakdown"], "wall_clock_breakdown");
    flags.push_back(
        entry("wall_clock_breakdown", "wall-clock-breakdown", breakdown ? "true" : "false"));
  }
  if (config.contains("zero_optimization")) map_zero(config["zero_optimization"], flags);
  map_precision(config, flags);
  if (config.contains("optimizer")) map_optimizer(config["optimizer"], flags);
  map_scheduler(config, flags);
  return flags;
}

BatchSizes complete_batch_sizes(BatchSizes given, int64_t data_ranks) {
  COURSE_CHECK(given.train > 0 || given.micro > 0,
               "DeepSpeed's batch sizes need train_batch_size or train_micro_batch_size_per_gpu");
  BatchSizes out = given;
  const auto divided = [&](int64_t whole, int64_t by, const char* missing) {
    COURSE_CHECK(by > 0 && whole % by == 0, "train_batch_size ", given.train,
                 " does not divide into ", by, " (", missing, " cannot be derived: ", data_ranks,
                 " data-parallel rank(s))");
    return whole / by;
  };
  if (given.train > 0 && given.micro > 0 && given.accumulation == 0) {
    out.accumulation = divided(given.train, given.micro * data_ranks,
                               "gradient_accumulation_steps = train / (micro x ranks)");
  } else if (given.train > 0 && given.micro == 0) {
    if (out.accumulation == 0) out.accumulation = 1;
    out.micro = divided(given.train, out.accumulation * data_ranks,
                        "train_micro_batch_size_per_gpu = train / (accumulation x ranks)");
  } else if (given.train == 0) {
    if (out.accumulation == 0) out.accumulation = 1;
    out.train = given.micro * out.accumulation * data_ranks;
  }
  COURSE_CHECK(out.train == out.micro * out.accumulation * data_ranks,
               "train_batch_size (--train-batch-size) ", out.train,
               " is not train_micro_batch_size_per_gpu (--batch-size) ", out.micro,
               " x gradient_accumulation_steps (--accumulate, or the pipeline's --micro-batches) ",
               out.accumulation, " x ", data_ranks,
               " data-parallel rank(s) = ", out.micro * out.accumulation * data_ranks);
  return out;
}

}  // namespace course::train
