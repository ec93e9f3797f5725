// A tiny classifier (one linear layer on 32 fixed samples) trained by the shared training loop,
// optionally with its gradients clipped, for the loop's own tests on one process and on several
// ranks.
#pragma once

#include <cmath>
#include <memory>
#include <optional>
#include <random>

#include "common/nn/linear.h"
#include "common/optim/make_optimizer.h"
#include "common/train/classifier_step.h"
#include "common/train/training_loop.h"

namespace course::train::testing {

struct TinyRun {
  TrainingFlags flags;
  std::mt19937 rng{5};
  nn::Linear model{4, 3, rng, Device::cpu()};
  std::unique_ptr<optim::Optimizer> optimizer =
      optim::make_optimizer({.lr = 0.1f}, model.state().parameters);
  Batch data;
  int64_t steps_taken = 0;  // by the step hook, in this run
  std::function<void(int64_t step)> on_step;
  std::function<bool(int64_t epoch, const EvalTally&)> after_epoch;
  std::function<EvalTally()> epoch_training_tally;
  std::vector<float> losses;  // of every step, in this run
  std::optional<float> clip_grad_norm;
  std::vector<float> gradient_norms;  // before clipping, summed by hand on the host
  nlohmann::json identity = {{"model", "tiny"}};

  explicit TinyRun(int64_t steps) {
    flags.test = true;
    flags.test_nsteps = steps;
    flags.progress = false;
    std::vector<float> x(32 * 4);
    std::vector<int64_t> y(32);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * static_cast<float>(i));
    for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int64_t>(i % 3);
    data = {Tensor::from_vector(x, {32, 4}), Tensor::from_vector(y, {32})};
  }

  // Batches of 4 of the 32 samples: 8 steps per epoch.
  LoopResult run(parallel::Communicator* comm = nullptr) {
    optim::GradientClipping clipping(clip_grad_norm);
    LoopHooks hooks;
    int64_t batch = 0;
    hooks.start_epoch = [&](int64_t, int64_t first) { batch = first; };
    hooks.step = [&](StepPhases& phases) {
      phases.start(Phase::kForward);
      const Batch b{data.images.slice(4 * batch, 4 * batch + 4),
                    data.labels.slice(4 * batch, 4 * batch + 4)};
      ++batch;
      model.zero_grad();
      const ClassifierForward f = classifier_forward(model, b, flags);
      classifier_backward(model, f, b.labels, flags);
      if (clipping.on()) {
        double squares = 0;
        for (const nn::Parameter* p : model.parameters()) {
          for (float g : p->grad.to_vector<float>()) squares += static_cast<double>(g) * g;
        }
        gradient_norms.push_back(static_cast<float>(std::sqrt(squares)));
      }
      clipping.apply_to_whole(model.parameters());
      optimizer->step();
      ++steps_taken;
      return f.loss.loss;
    };
    hooks.after_step = [&](int64_t step, float loss) {
      losses.push_back(loss);
      if (on_step) on_step(step);
    };
    hooks.validate = [&] {
      EvalTally t;
      tally(model.forward(data.images), data.labels, t);
      return t;
    };
    hooks.after_epoch = after_epoch;
    hooks.epoch_training_tally = epoch_training_tally;
    TrainingLoop loop(flags,
                      {.device = Device::cpu(),
                       .model = &model,
                       .optimizer = optimizer.get(),
                       .lr_at = [](int64_t step) { return 0.1f / (1 + step); },
                       .steps_per_epoch = 8,
                       .global_batch = 4,
                       .identity = identity,
                       .comm = comm,
                       .clipping = &clipping},
                      hooks);
    return loop.run();
  }

  std::vector<float> weights() const { return model.weight.value.to_vector<float>(); }
};

}  // namespace course::train::testing
