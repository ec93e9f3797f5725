// What every day-4 run shares, whatever its model: the start (the flags checked on every rank,
// this rank's device, the figures of --throughput-gpus and --estimate-only), the memory estimate
// checked against the budget, and the run on the training loop once a model family has built its
// parts (the optimizer and clipping, the loop's settings, a resumed run's refresh, the estimate
// and the header printed, the loss scaling's, the parallelism's and the memory reports). The GPT
// (gpt_trainer.cc) and the image models (image_trainer.cc) give only what differs: their data,
// model, parallelism, step and header.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/nn/module.h"
#include "common/optim/gradient_clipping.h"
#include "common/parallel/comm/communicator.h"
#include "common/parallel/planning/memory_estimate.h"
#include "common/parallel/training_parallelism.h"
#include "common/tensor/device.h"
#include "common/train/training_loop.h"
#include "day4_large_models/gpt_options.h"
#include "day4_large_models/parallel_modes.h"

namespace day4 {

// A model family's estimate for `ranks` ranks, and the parameters the ZeRO paper's figures count.
struct EstimatedRun {
  course::parallel::MemoryEstimate estimate;
  int64_t parameters = 0;
};
using EstimateFor = std::function<EstimatedRun(int ranks)>;

// The world and this rank's device, after the flags are checked on every rank; none when they
// ask for figures only (--throughput-gpus, --estimate-only: printed on the lead rank from
// `estimate_for`, nothing trained).
struct LabStart {
  std::shared_ptr<course::parallel::Communicator> comm;
  course::Device device;
};
std::optional<LabStart> start_lab_run(GptLabOptions& options, const EstimateFor& estimate_for);

// The run's estimate (`estimated`: a run the estimate covers), enforced against the budget;
// none where it is not estimated.
std::optional<course::parallel::MemoryEstimate> checked_estimate(const GptLabOptions& options,
                                                                 int ranks, course::Device device,
                                                                 bool estimated,
                                                                 const EstimateFor& estimate_for);

// What a model family has built for the loop.
struct LabRunParts {
  course::Device device;
  course::nn::Module* model = nullptr;
  course::parallel::TrainingParallelism* parallelism = nullptr;
  int64_t steps_per_epoch = 0;
  int64_t global_batch = 0;  // a step's samples over every replica, in `unit`
  std::string unit;
  double flops_per_unit = 0;
  // What a resumed checkpoint must match, beside the parallelism's layout.
  nlohmann::json identity;
  // The loop's hooks: its data, its step with this optimizer and clipping, its validation.
  std::function<course::train::LoopHooks(LabOptimizer&, course::optim::GradientClipping&)> hooks;
  std::optional<course::parallel::MemoryEstimate> estimate;
  int64_t parameters = 0;              // the whole model's, before any sharding
  int64_t resident = 0;                // device memory in use before the model: the data's
  std::function<void()> print_header;  // on the lead rank, before the first step
};

course::train::LoopResult run_lab_loop(const GptLabOptions& options, const LabRunParts& parts,
                                       const std::shared_ptr<course::parallel::Communicator>& comm);

}  // namespace day4
