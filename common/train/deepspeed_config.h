// A DeepSpeed configuration file (ds_config.json, what `deepspeed --deepspeed_config` reads) as
// the course's flags: each key the course's slides use maps onto the flag that does the same,
// so `--config ds_config.json` is the same run as those flags written out, and flags given on the
// command line win over the file's (CLI11's rule for configuration files).
//
//   train_batch_size                     --train-batch-size (checked: micro batch x
//                                        accumulation x data-parallel ranks)
//   train_micro_batch_size_per_gpu       --batch-size
//   gradient_accumulation_steps          --accumulate
//   gradient_clipping                    --clip-grad-norm (0: none)
//   steps_per_print                      --log-every
//   zero_optimization.stage 0-3          --sharding none / zero1 / zero2 / zero3
//   zero_optimization.offload_optimizer  --cpu-offload ({"device": "cpu"}; at stage 3 with
//     and .offload_param                 offload_param too: the lab offloads both together)
//   bf16.enabled / fp16.enabled          --amp --amp-dtype bf16 / f16 (fp16.loss_scale: 0 only)
//   optimizer.type                       --optimizer: Adam and AdamW -> adamw, Lamb -> lamb,
//                                        OneBitAdam -> onebit-adam, OneBitLamb -> onebit-lamb
//   optimizer.params                     lr -> --lr, betas -> --beta1 --beta2, eps -> --eps,
//                                        weight_decay -> --wd, freeze_step -> --freeze-step
//   scheduler.type                       WarmupLR -> --lr-schedule constant, WarmupDecayLR ->
//                                        --lr-schedule linear; no scheduler: constant, no warm-up
//   scheduler.params                     warmup_max_lr -> --lr, warmup_num_steps ->
//                                        --warmup-steps, total_num_steps -> --lr-decay-steps
//                                        (warmup_min_lr 0 and warmup_type "linear" only)
// Any other key, or a value the lab cannot honour, is refused with its name: nothing in the file
// is silently ignored.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace course::train {

// One flag's long name (without "--") and its value ("true" for a switch).
struct ConfigFlag {
  std::string flag, value;
};

// The flags `config` stands for, in the order of the list above. Throws course::Error naming the
// first key it cannot map.
std::vector<ConfigFlag> deepspeed_flags(const nlohmann::json& config);

// What --config resolved to, for the run's summary.
struct ResolvedConfig {
  std::string file;
  std::vector<ConfigFlag> from_file;   // the file's flags that the run took
  std::vector<ConfigFlag> overridden;  // the file's flags that the command line replaced
  std::string summary() const;         // "--config F: --batch-size 8 ... (command line: --lr)"
};

// Adds --config FILE to `app`: a DeepSpeed JSON file read as the flags above (every one must be
// a flag of `app`); `resolved->file` names the file in its messages. After app.parse(),
// `resolved` holds what the file set, with `args` (the command line) telling which of its flags
// the command line gave instead, by any of the option's names (-b for --batch-size).
void add_deepspeed_config_flag(CLI::App& app, std::shared_ptr<ResolvedConfig> resolved);
void resolve_config(ResolvedConfig& resolved, const CLI::App& app,
                    const std::vector<std::string>& args);

}  // namespace course::train
