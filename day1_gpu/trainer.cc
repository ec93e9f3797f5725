// The day-1 training run.
#include "day1_gpu/trainer.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/core/format.h"
#include "common/kernels/cross_entropy.h"
#include "common/nn/autocast.h"
#include "common/nn/models.h"
#include "common/optim/schedule.h"
#include "common/train/checkpoint.h"
#include "common/train/profiler.h"
#include "common/train/progress.h"
#include "common/train/step_graph.h"
#include "common/train/stop_signal.h"
#include "common/train/training_state.h"
#include "day1_gpu/exercises.h"

namespace day1 {

namespace {

using namespace course;

constexpr int64_t kValidationBatch = 250;

struct Validation {
  double accuracy;
  float loss;
};

Validation validate_model(nn::Module& model, const LabelledImages& data, const LabOptions& o,
                          Device device) {
  model.set_training(false);
  ImageBatches batches(
      data, {.batch_size = kValidationBatch, .image_size = o.image_size, .shuffle = false},
      Device::cpu());
  train::EvalTally tally;
  nn::Autocast autocast(o.amp_dtype, o.amp);
  for (int64_t b = 0; b < batches.size(); ++b) {
    Batch batch = batches.batch(b);
    if (device != Device::cpu()) batch = to_device(batch, device);
    if (o.channels_last) batch.images = to_channels_last(batch.images);
    const Tensor logits = model.forward(batch.images);
    train::tally(logits, batch.labels, tally);
  }
  model.set_training(true);
  return {tally.accuracy(), static_cast<float>(tally.loss())};
}

struct ForwardPass {
  Tensor logits;
  CrossEntropyOutput loss;
};

ForwardPass forward_loss(nn::Module& model, const Tensor& images, const Tensor& labels,
                         const LabOptions& o) {
  nn::Autocast autocast(o.amp_dtype, o.amp);
  ForwardPass f;
  f.logits = model.forward(images);
  f.loss = softmax_cross_entropy(f.logits, labels, o.label_smoothing);
  return f;
}

void backward_pass(nn::Module& model, const ForwardPass& f, const Tensor& labels,
                   const LabOptions& o, float grad_scale) {
  nn::Autocast autocast(o.amp_dtype, o.amp);
  model.zero_grad();
  model.backward(softmax_cross_entropy_backward(f.loss, labels, o.label_smoothing, f.logits.dtype(),
                                                grad_scale));
}

}  // namespace

LabResult run_lab(const LabOptions& o) {
  validate(o);
  const Device device = o.device.empty() ? default_device() : parse_device(o.device);
  require_device(device);
  if (o.max_memory_mb > 0) device_allocator(device).set_limit(o.max_memory_mb << 20);
  if (o.cuda_graphs && device.is_cpu()) {
    std::fprintf(stderr,
                 "--cuda-graphs: CUDA graphs need a GPU; on the CPU the step is recorded as a "
                 "task graph and replayed instead (the same code path, no launch overhead to "
                 "save)\n");
  }

  const LabelledImages train_data = train::lab_images(o, Split::kTrain);
  ImageBatches batches(train_data,
                       {.batch_size = o.batch_size, .image_size = o.image_size, .seed = o.seed},
                       Device::cpu());
  auto model = nn::make_model(
      {.name = o.model, .in_channels = 1, .num_classes = kFashionMnistClasses, .seed = o.seed},
      device);
  nn::ModuleState state = model->state();
  const std::vector<nn::Parameter*> params = model->parameters();
  optim::Sgd optimizer(state.parameters, {.lr = o.lr, .momentum = o.mom, .weight_decay = o.wd});
  const int64_t steps_per_epoch = batches.size();
  const auto schedule = optim::one_cycle_schedule(o.lr, o.epochs * steps_per_epoch);
  optim::LossScaler scaler;
  const bool loss_scaling = o.amp && o.amp_dtype == DType::kF16;

  int64_t start_epoch = 0, start_batch = 0;
  if (!o.resume.empty()) {
    const auto header = train::load_checkpoint(o.resume, train::training_state(*model, optimizer));
    COURSE_CHECK(header.value("model", "") == o.model, "checkpoint ", o.resume, " is of model ",
                 header.value("model", "?"), ", not ", o.model);
    start_epoch = header.at("epoch");
    start_batch = header.at("batch");
    optimizer.set_steps(header.at("step"));
    std::printf("resumed from %s at epoch %lld, step %lld\n", o.resume.c_str(),
                static_cast<long long>(start_epoch + 1), static_cast<long long>(optimizer.steps()));
  }
  const auto save = [&](int64_t epoch, int64_t batch) {
    if (o.chkpt.empty()) return;
    train::save_checkpoint(
        o.chkpt, train::training_state(*model, optimizer),
        {{"model", o.model}, {"epoch", epoch}, {"batch", batch}, {"step", optimizer.steps()}});
  };

  std::printf("training %s on %s: %lld images of %lldx%lld, batch %lld, %lld steps per epoch%s%s\n",
              o.model.c_str(), device.str().c_str(), static_cast<long long>(batches.samples()),
              static_cast<long long>(o.image_size), static_cast<long long>(o.image_size),
              static_cast<long long>(o.batch_size), static_cast<long long>(steps_per_epoch),
              o.amp ? (o.amp_dtype == DType::kF16 ? ", amp f16" : ", amp bf16") : "",
              o.channels_last ? ", channels-last" : "");
  if (o.model_memory) {
    std::printf("model memory (parameters, gradients, optimizer state): %s\n",
                format_bytes(model_memory_bytes(params, optimizer)).c_str());
  }
  std::fflush(stdout);

  LabResult result;
  train::Chronometer chrono(device);
  train::Profiler profiler(device, !o.profile.empty());
  int64_t run_steps = 0;
  // --cuda-graphs: after one eager step, forward, backward and update replay as one graph.
  std::optional<train::StepGraph> graph;
  if (o.cuda_graphs) {
    graph.emplace(device, [&](const Tensor& images, const Tensor& labels) {
      const ForwardPass f = forward_loss(*model, images, labels, o);
      backward_pass(*model, f, labels, o, 1.0f);
      optimizer.update();
      return f.loss.loss;
    });
  }
  const LabelledImages test_data = o.test ? LabelledImages{} : train::lab_images(o, Split::kTest);
  for (int64_t epoch = start_epoch; epoch < o.epochs; ++epoch) {
    batches.set_epoch(epoch);
    train::Progress progress(o.progress, epoch, o.epochs, steps_per_epoch);
    int64_t b = epoch == start_epoch ? start_batch : 0;
    for (; b < steps_per_epoch && !(o.test && optimizer.steps() >= o.test_nsteps); ++b) {
      const bool record = profiler.enabled() && record_step(run_steps, {});
      auto step_range = profiler.range("step", record);
      chrono.start(train::Phase::kLoad);
      Batch batch;
      {
        auto r = profiler.range("load", record);
        batch = batches.batch(b);
        if (device != Device::cpu()) batch = to_device(batch, device);
        if (o.channels_last) batch.images = to_channels_last(batch.images);
      }
      optimizer.set_lr(schedule->lr_at(optimizer.steps()));
      Tensor step_loss;
      if (graph && run_steps > 0 && graph->fits(batch.images, batch.labels)) {
        check_class_labels(batch.labels, kFashionMnistClasses);  // the graph cannot
        chrono.start(train::Phase::kGraphReplay);
        auto r = profiler.range("graph replay", record);
        optimizer.prepare_step();
        step_loss = graph->run(batch.images, batch.labels);
        optimizer.count_step();
      } else {
        chrono.start(train::Phase::kForward);
        ForwardPass f;
        {
          auto r = profiler.range("forward", record);
          f = forward_loss(*model, batch.images, batch.labels, o);
        }
        chrono.start(train::Phase::kBackward);
        {
          auto r = profiler.range("backward", record);
          backward_pass(*model, f, batch.labels, o, loss_scaling ? scaler.scale() : 1.0f);
        }
        chrono.start(train::Phase::kOptimizer);
        {
          auto r = profiler.range("optimizer", record);
          if (loss_scaling) {
            scaled_optimizer_step(scaler, optimizer, params);
          } else {
            optimizer.step();
          }
        }
        step_loss = f.loss.loss;
      }
      chrono.end_step(batch.labels.numel());
      const float loss = step_loss.to_vector<float>()[0];
      COURSE_CHECK(std::isfinite(loss), "the training loss diverged (", loss, ") at step ",
                   optimizer.steps(), ": lower --lr");
      result.last_loss = loss;
      ++run_steps;
      progress.update(b + 1, loss);
      if (const int signal = train::stop_signal()) {
        save(epoch, b + 1);
        train::stop_training(signal, optimizer.steps(), o.chkpt);
      }
    }
    if (o.test) {
      save(epoch, b);
      break;
    }
    save(epoch + 1, 0);
    const Validation v = validate_model(*model, test_data, o, device);
    result.test_accuracy = v.accuracy;
    std::printf("epoch %lld: train loss %.4f, test loss %.4f, test accuracy %.2f%%\n",
                static_cast<long long>(epoch + 1), result.last_loss, v.loss, 100 * v.accuracy);
    if (!o.metrics.empty()) {
      std::ofstream(o.metrics, std::ios::app) << nlohmann::json{{"epoch", epoch + 1},
                                                                {"step", optimizer.steps()},
                                                                {"train_loss", result.last_loss},
                                                                {"test_loss", v.loss},
                                                                {"test_accuracy", v.accuracy},
                                                                {"lr", optimizer.lr()}}
                                                     .dump()
                                              << "\n";
    }
  }
  result.steps = run_steps;
  result.skipped_steps = scaler.skipped_steps();
  result.timing = chrono.report();
  std::printf("%s", result.timing.table().c_str());
  if (loss_scaling) {
    std::printf("loss scale %.0f, %lld step(s) skipped\n", scaler.scale(),
                static_cast<long long>(scaler.skipped_steps()));
  }
  if (profiler.enabled()) {
    profiler.write(o.profile);
    std::printf("profile: %zu ranges written to %s (open in https://ui.perfetto.dev)\n",
                profiler.event_count(), o.profile.c_str());
  }
  for (nn::Parameter* p : params) result.parameters.push_back(p->value.to_vector<float>());
  return result;
}

}  // namespace day1
