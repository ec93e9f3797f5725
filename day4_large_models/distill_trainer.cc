// The distillation run: the teacher loaded from its checkpoint and frozen, the student's steps
// on the shared training loop with TP4.15's loss, the optional baseline from the labels alone.
#include "day4_large_models/distill_trainer.h"

#include <cstdio>
#include <memory>
#include <vector>

#include "common/core/error.h"
#include "common/core/format.h"
#include "common/data/device_batches.h"
#include "common/data/distributed_sampler.h"
#include "common/kernels/layout.h"
#include "common/nn/models.h"
#include "common/optim/make_optimizer.h"
#include "common/optim/schedule.h"
#include "common/train/classifier_step.h"
#include "common/train/evaluate.h"
#include "common/train/training_loop.h"
#include "day4_large_models/exercises.h"
#include "day4_large_models/trained_model.h"

namespace day4 {

using namespace course;

namespace {

// What both students' runs read: the training batches on the device, and the placing of
// validation batches.
struct StudentData {
  const LabDatasets& data;
  DeviceBatches& batches;
  std::function<Batch(const Batch&)> place;
};

// Trains a fresh student from the labels alone (no teacher) or distilled from `teacher`.
std::optional<double> train_student(const DistillOptions& o, StudentData& in, Device device,
                                    nn::Module* teacher) {
  const Dataset& train_set = *in.data.train;
  const SamplerOptions sampler{.dataset_size = train_set.size(), .seed = o.seed};
  const int64_t steps_per_epoch = batches_per_epoch(train_set.size(), o.batch_size, o.drop_last);
  const auto student = train::make_classifier(o, train_set, device);
  const auto optimizer = optim::make_optimizer(
      {.lr = o.lr, .momentum = o.mom, .weight_decay = o.wd}, student->state().parameters);
  const std::shared_ptr<const optim::Schedule> schedule =
      optim::one_cycle_schedule(o.lr, o.epochs * steps_per_epoch);

  train::LoopHooks hooks;
  hooks.start_epoch = [&](int64_t epoch, int64_t first_batch) {
    in.batches.start_epoch(distributed_sample(sampler, 0, 1, epoch), epoch, first_batch);
  };
  hooks.step = [&](train::StepPhases& phases) {
    phases.start(train::Phase::kLoad);
    Batch batch = in.batches.next();
    if (o.channels_last) batch.images = to_memory_format(batch.images, MemoryFormat::kChannelsLast);
    phases.start(train::Phase::kForward);
    const train::ClassifierForward f = train::classifier_forward(*student, batch, o);
    Tensor loss = f.loss.loss;
    if (teacher) {
      const Tensor teacher_logits = train::classifier_forward(*teacher, batch, o).logits;
      const DistillationLoss d =
          distillation_loss(f.logits, teacher_logits, batch.labels, o.temperature, o.alpha);
      phases.start(train::Phase::kBackward);
      train::backward_from_logits(*student, f, d.logits_grad, o);
      loss = Tensor::from_vector(std::vector<float>{d.loss}, Shape{1});
    } else {
      phases.start(train::Phase::kBackward);
      train::classifier_backward(*student, f, batch.labels, o);
    }
    phases.start(train::Phase::kOptimizer);
    optimizer->step();
    return loss;
  };
  hooks.validate = [&] {
    return train::evaluate(*student, in.data.val, in.data.val_transform, o, 0, 1, in.place);
  };
  train::TrainingLoop loop(
      o,
      {.device = device,
       .model = student.get(),
       .optimizer = optimizer.get(),
       .lr_at = [&](int64_t step) { return schedule->lr_at(step); },
       .steps_per_epoch = steps_per_epoch,
       .global_batch = o.batch_size,
       .identity = {{"model", o.model}, {"teacher", teacher ? o.teacher_model : "none"}},
       .recipe = teacher ? "- distilled from " + o.teacher + " (" + o.teacher_model + "), T " +
                               format_number(o.temperature) + ", alpha " + format_number(o.alpha)
                         : "- from the labels alone"},
      hooks);
  return loop.run().test_accuracy;
}

}  // namespace

DistillReport run_distillation(const DistillOptions& o) {
  validate(o);
  train::check_output_flags(o);  // before the baseline's training, not after it
  const Device device = o.device.empty() ? default_device() : parse_device(o.device);
  require_device(device);
  const LabDatasets data = open_dataset(o);
  DataLoader loader(data.train, data.train_transform, loader_options(o, o.batch_size));
  DeviceBatches::Transfer transfer;
  if (!device.is_cpu()) transfer = copy_to_device;
  DeviceBatches batches(loader, device, o.non_blocking, transfer);
  StudentData in{data, batches, [&](const Batch& host) {
                   Batch b = batches.place(host);
                   if (o.channels_last) {
                     b.images = to_memory_format(b.images, MemoryFormat::kChannelsLast);
                   }
                   return b;
                 }};

  const auto teacher = load_trained(o.teacher, o.teacher_model, "--teacher", *data.train, device);
  DistillReport report;
  report.teacher_parameters = count_parameters(*teacher);
  report.teacher_accuracy =
      train::evaluate(*teacher, data.val, data.val_transform, o, 0, 1, in.place).accuracy();
  report.student_parameters = count_parameters(
      *train::make_classifier(o, *data.train, device));  // the students' size, before training
  std::printf("teacher %s (%s): %s parameters, test accuracy %s\n", o.teacher_model.c_str(),
              o.teacher.c_str(), std::to_string(report.teacher_parameters).c_str(),
              (format_percent(report.teacher_accuracy) + "%").c_str());
  std::printf("student %s: %s parameters, %lld epoch(s) of %lld images, batch %lld, on %s\n",
              o.model.c_str(), std::to_string(report.student_parameters).c_str(),
              static_cast<long long>(o.epochs), static_cast<long long>(data.train->size()),
              static_cast<long long>(o.batch_size), device.str().c_str());
  if (o.baseline) {
    std::printf("-- the student from the labels alone (cross-entropy, label smoothing %s)\n",
                format_number(o.label_smoothing).c_str());
    std::fflush(stdout);
    DistillOptions alone = o;
    alone.chkpt = alone.metrics = alone.logdir = alone.profile = "";
    report.baseline_accuracy = train_student(alone, in, device, nullptr);
  }
  std::printf("-- the student distilled: T %s, alpha %s\n", format_number(o.temperature).c_str(),
              format_number(o.alpha).c_str());
  std::fflush(stdout);
  report.distilled_accuracy = train_student(o, in, device, teacher.get());

  if (!report.distilled_accuracy) return report;  // --test: no validation
  std::printf("\n| network | parameters | test accuracy |\n| --- | ---: | ---: |\n");
  std::printf("| teacher %s | %s | %s |\n", o.teacher_model.c_str(),
              std::to_string(report.teacher_parameters).c_str(),
              (format_percent(report.teacher_accuracy) + "%").c_str());
  if (report.baseline_accuracy) {
    std::printf("| %s from the labels | %s | %s |\n", o.model.c_str(),
                std::to_string(report.student_parameters).c_str(),
                (format_percent(*report.baseline_accuracy) + "%").c_str());
  }
  std::printf("| %s distilled (T %s, alpha %s) | %s | %s |\n", o.model.c_str(),
              format_number(o.temperature).c_str(), format_number(o.alpha).c_str(),
              std::to_string(report.student_parameters).c_str(),
              (format_percent(*report.distilled_accuracy) + "%").c_str());
  return report;
}

}  // namespace day4
