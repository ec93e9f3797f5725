// Training on the shared loop for Part 7's modes: distill's students and prune's fine-tuning.
// CompressData opens the lab's data once (loader, batches on the device, placing of validation
// batches); train_on_loop runs --epochs of SGD with the one-cycle schedule over it, with the
// step's loss and the work after each optimizer step given by the mode.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/data/device_batches.h"
#include "common/nn/module.h"
#include "common/train/classifier_step.h"
#include "common/train/lab_flags.h"
#include "common/train/step_phases.h"

namespace day4 {

class CompressData {
 public:
  CompressData(const course::train::TrainingFlags& flags, course::Device device);
  CompressData(const CompressData&) = delete;
  CompressData& operator=(const CompressData&) = delete;

  const course::LabDatasets& datasets() const { return data_; }
  course::DeviceBatches& batches() { return batches_; }
  // A validation batch where and how the model takes it.
  course::Batch place(const course::Batch& host);
  course::Device device() const { return device_; }

 private:
  const course::train::TrainingFlags& flags_;
  course::Device device_;
  course::LabDatasets data_;
  course::DataLoader loader_;
  course::DeviceBatches batches_;
};

struct TrainingRun {
  course::nn::Module& model;
  // The step's loss and backward pass after the model's forward pass (starting the backward
  // phase), returning the loss to report; empty: the labels' cross-entropy (classifier_backward).
  std::function<course::Tensor(const course::train::ClassifierForward&, const course::Batch&,
                               course::train::StepPhases&)>
      loss_and_backward;
  std::function<void()> after_step;  // after each optimizer step, e.g. re-applying masks
  nlohmann::json identity;           // of the checkpoint and metrics
  std::string recipe;                // a line for the run's summary
};

// Part 7's training is in f32: refuses --amp and --amp-dtype, which `mode` would otherwise ignore.
void refuse_mixed_precision(const course::train::TrainingFlags& flags, const std::string& mode);

// The test accuracy after the last epoch (none with --test).
std::optional<double> train_on_loop(const course::train::TrainingFlags& flags, CompressData& in,
                                    const TrainingRun& run);

}  // namespace day4
