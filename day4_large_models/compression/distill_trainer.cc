// The distillation run: the teacher loaded from its checkpoint and frozen, the student's steps
// on the shared training loop with TP4.19's loss, the optional baseline from the labels alone.
#include "day4_large_models/compression/distill_trainer.h"

#include <cstdio>
#include <memory>
#include <vector>

#include "common/core/format.h"
#include "common/core/launch_rank.h"
#include "common/train/classifier_step.h"
#include "common/train/evaluate.h"
#include "common/train/training_loop.h"
#include "day4_large_models/compression/compress_training.h"
#include "day4_large_models/compression/trained_model.h"
#include "day4_large_models/exercises.h"

namespace day4 {

using namespace course;

namespace {

// Trains a fresh student from the labels alone (no teacher) or distilled from `teacher`.
std::optional<double> train_student(const DistillOptions& o, CompressData& in,
                                    nn::Module* teacher) {
  const auto student = train::make_classifier(o, *in.datasets().train, in.device());
  TrainingRun run{.model = *student,
                  .identity = {{"model", o.model}, {"teacher", teacher ? o.teacher_model : "none"}},
                  .recipe = "- from the labels alone"};
  if (teacher) {
    run.loss_and_backward = [&](const train::ClassifierForward& f, const Batch& batch,
                                train::StepPhases& phases) {
      const Tensor teacher_logits = train::classifier_forward(*teacher, batch, o).logits;
      const DistillationLoss d =
          distillation_loss(f.logits, teacher_logits, batch.labels, o.temperature, o.alpha);
      phases.start(train::Phase::kBackward);
      train::backward_from_logits(*student, f, d.logits_grad, o);
      return Tensor::from_vector(std::vector<float>{d.loss}, Shape{1});
    };
    run.recipe = "- distilled from " + o.teacher + " (" + o.teacher_model + "), T " +
                 format_number(o.temperature) + ", alpha " + format_number(o.alpha);
  }
  return train_on_loop(o, in, run);
}

}  // namespace

DistillReport run_distillation(const DistillOptions& o) {
  course::check_alike_on_every_rank([&] { validate(o); });
  train::check_output_flags(o);  // before the baseline's training, not after it
  const Device device = named_or_default_device(o.device);
  require_device(device);
  CompressData in(o, device);
  const LabDatasets& data = in.datasets();
  const auto place = [&](const Batch& host) { return in.place(host); };

  const auto teacher = load_trained(o.teacher, o.teacher_model, "--teacher", *data.train, device);
  DistillReport report;
  report.teacher_parameters = teacher->parameter_count();
  report.teacher_accuracy =
      train::evaluate(*teacher, data.val, data.val_transform, o, 0, 1, place).accuracy();
  report.student_parameters = train::make_classifier(o, *data.train, device)
                                  ->parameter_count();  // the students' size, before training
  std::printf("teacher %s (%s): %s parameters, test accuracy %s\n", o.teacher_model.c_str(),
              o.teacher.c_str(), std::to_string(report.teacher_parameters).c_str(),
              (format_percent(report.teacher_accuracy) + "%").c_str());
  std::printf("student %s: %s parameters, %lld epoch(s) of %lld images, batch %lld, on %s\n",
              o.model.c_str(), std::to_string(report.student_parameters).c_str(),
              static_cast<long long>(o.epochs), static_cast<long long>(data.train->size()),
              static_cast<long long>(o.batch_size), device.str().c_str());
  if (o.baseline) {
    // TP4.19 on two rows first: an unwritten exercise stops the run now, not after the baseline.
    distillation_loss(Tensor::from_vector<float>({1, -1, 0.5f, 2}, {2, 2}),
                      Tensor::from_vector<float>({0, 1, -0.5f, 1}, {2, 2}),
                      Tensor::from_vector<int64_t>({0, 1}, {2}), o.temperature, o.alpha);
    std::printf("-- the student from the labels alone (cross-entropy, label smoothing %s)\n",
                format_number(o.label_smoothing).c_str());
    std::fflush(stdout);
    DistillOptions alone = o;
    alone.chkpt = alone.metrics = alone.logdir = alone.profile = "";
    report.baseline_accuracy = train_student(alone, in, nullptr);
  }
  std::printf("-- the student distilled: T %s, alpha %s\n", format_number(o.temperature).c_str(),
              format_number(o.alpha).c_str());
  std::fflush(stdout);
  report.distilled_accuracy = train_student(o, in, teacher.get());

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
