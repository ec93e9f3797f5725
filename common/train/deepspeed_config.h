// A DeepSpeed configuration file (ds_config.json, what `deepspeed --deepspeed_config` reads) as
// the course's flags: each key the course's slides use maps onto the flag that does the same,
// so `--config ds_config.json` is the same run as those flags written out, and flags given on the
// command line win over the file's (CLI11's rule for configuration files).
//
//   train_batch_size                     --train-batch-size; with one of the next two missing,
//                                        it is derived as DeepSpeed derives it (BatchSizes)
//   train_micro_batch_size_per_gpu       --batch-size
//   gradient_accumulation_steps          --accumulate
//   gradient_clipping                    --clip-grad-norm (0: none)
//   steps_per_print                      --log-every
//   wall_clock_breakdown                 --wall-clock-breakdown (the phases' times every
//                                        --log-every steps)
//   zero_optimization.stage 0-3          --sharding none / zero1 / zero2 / zero3
//   zero_optimization.offload_optimizer  --cpu-offload ({"device": "cpu"}; at stage 3 with
//     and .offload_param                 offload_param too: the lab offloads both together)
//   zero_optimization.reduce_bucket_size --reduce-bucket-size (elements; stage 0: DDP's buckets)
//     .allgather_bucket_size             --allgather-bucket-size (stages 1 and 2)
//     .overlap_comm, .reduce_scatter     --[no-]overlap-comm, --[no-]reduce-scatter
//     .contiguous_gradients              (always so: a block's gradients are one flat buffer)
//     .stage3_prefetch_bucket_size,      --prefetch-bucket-size, --max-live-parameters,
//      stage3_max_live_parameters,       --param-persistence-threshold (stage 3; elements)
//      stage3_param_persistence_threshold
//   bf16.enabled / fp16.enabled          --amp --amp-dtype bf16 / f16 (fp16.loss_scale: 0 only)
//   fp16.initial_scale_power, loss_scale_window, hysteresis, min_loss_scale
//                                        --initial-scale-power, --loss-scale-window,
//                                        --hysteresis, --min-loss-scale
//   optimizer.type                       --optimizer: Adam and AdamW -> adamw, Lamb -> lamb,
//                                        OneBitAdam -> onebit-adam, OneBitLamb -> onebit-lamb
//   optimizer.params                     lr -> --lr, betas -> --beta1 --beta2, eps -> --eps,
//                                        weight_decay -> --wd, freeze_step -> --freeze-step,
//                                        OnebitLamb's max_coeff ... factor_threshold -> the
//                                        flags of their names (cuda_aware, comm_backend_name:
//                                        ignored, said why)
//   scheduler.type                       WarmupLR -> --lr-schedule constant, WarmupDecayLR ->
//                                        --lr-schedule linear; no scheduler: constant, no warm-up
//   scheduler.params                     warmup_max_lr -> --lr, warmup_num_steps ->
//                                        --warmup-steps, warmup_type -> --warmup-type,
//                                        total_num_steps -> --lr-decay-steps (warmup_min_lr 0)
// A key missing from a section the file has takes DeepSpeed's default, said as such (WarmupLR:
// warmup_max_lr 0.001, warmup_num_steps 1000, warmup_type log; ZeRO: buckets of 5e8 elements,
// overlap_comm at stage 3 only, reduce_scatter; stage 3: a prefetch of 5e7 elements, 1e9 live,
// tensors of up to 1e5 persistent). Any other key, or a value the lab cannot
// honour, is refused with its name: nothing in the file is silently ignored.
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

// One key of the file as the lab takes it: the flag's long name (without "--") and its value
// ("true" for a switch, "false" for its --no- form). `key` is DeepSpeed's dotted name; `note`
// says "DeepSpeed's default" for a missing key, or why a key with no flag (empty `flag`) has no
// effect in the lab.
struct ConfigFlag {
  std::string flag, value;
  std::string key, note;
};

// The keys `config` stands for, in the order of the list above. Throws course::Error naming the
// first key it cannot map.
std::vector<ConfigFlag> deepspeed_flags(const nlohmann::json& config);

// What --config resolved to, for the run's summary.
struct ResolvedConfig {
  std::string file;
  std::vector<ConfigFlag> from_file;   // the file's keys that the run took (or notes)
  std::vector<ConfigFlag> overridden;  // the file's flags that the command line replaced
  // One line per key: "  zero_optimization.stage  --sharding zero2", "... the command line's
  // --batch-size", "... ignored: why".
  std::string summary() const;
};

// DeepSpeed's three batch sizes (0: not given): train = micro x accumulation x data-parallel
// ranks.
struct BatchSizes {
  int64_t train = 0, micro = 0, accumulation = 0;
};
// DeepSpeed's rule (runtime/config.py): from train and one of the others, the third; from train
// alone, accumulation 1; from the two others, train. Throws course::Error naming the sizes when
// they do not divide or do not multiply to train_batch_size, or when neither train nor micro is
// given.
BatchSizes complete_batch_sizes(BatchSizes given, int64_t data_ranks);

// Adds --config FILE to `app`: a DeepSpeed JSON file read as the flags above (every one must be
// a flag of `app`); `resolved->file` names the file in its messages. After app.parse(),
// `resolved` holds what the file set, with `args` (the command line) telling which of its flags
// the command line gave instead, by any of the option's names (-b for --batch-size).
void add_deepspeed_config_flag(CLI::App& app, std::shared_ptr<ResolvedConfig> resolved);
void resolve_config(ResolvedConfig& resolved, const CLI::App& app,
                    const std::vector<std::string>& args);

}  // namespace course::train
