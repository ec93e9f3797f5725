// The GPT lab's wiring on the shared training loop (common/train/training_loop.h).
#include "day4_large_models/gpt_trainer.h"

#include <cmath>
#include <cstdio>

#include "common/data/text_corpus.h"
#include "common/data/token_windows.h"
#include "common/kernels/cross_entropy.h"
#include "common/nn/autocast.h"
#include "common/nn/generate.h"
#include "common/nn/gpt.h"
#include "common/optim/make_optimizer.h"
#include "common/optim/schedule.h"

namespace day4 {

using namespace course;

namespace {

struct LanguageModelStep {
  Tensor logits;  // (B T, V)
  CrossEntropyOutput loss;
};

LanguageModelStep forward(nn::Gpt& model, const NextTokenBatch& batch, const GptLabOptions& o) {
  nn::Autocast autocast(o.amp_dtype, o.amp);
  const Tensor logits = model.forward(batch.inputs);
  const Tensor rows = logits.view({batch.targets.numel(), model.config().vocabulary});
  return {rows, softmax_cross_entropy(rows, batch.targets)};
}

// Validation over every window of the held-out text: loss and next-token accuracy per token.
train::EvalTally validate_text(nn::Gpt& model, const TokenWindows& windows, Device device,
                               const GptLabOptions& o) {
  model.set_training(false);
  train::EvalTally tally;
  for (int64_t b = 0; b < windows.batches(); ++b) {
    const NextTokenBatch batch = next_token_batch(windows.batch(b), device);
    const LanguageModelStep s = forward(model, batch, o);
    tally.correct += train::count_correct(s.logits, batch.targets);
    tally.loss_sum += static_cast<double>(s.loss.host_loss()) * batch.targets.numel();
    tally.samples += batch.targets.numel();
  }
  model.set_training(true);
  return tally;
}

}  // namespace

GptLabResult run_gpt_lab(const GptLabOptions& o) {
  validate(o);
  const Device device = o.device.empty() ? default_device() : parse_device(o.device);
  require_device(device);
  const nn::GptConfig config = nn::gpt_preset(o.model);
  const int64_t context = o.context > 0 ? o.context : config.context;

  const TokenSplit text = split_documents(load_fortunes(o.text_dir), o.val_fraction, o.seed);
  const TokenWindowOptions window_options{
      .batch_size = o.batch_size, .context = context, .seed = o.seed};
  TokenWindows train_windows(text.train, window_options);
  TokenWindowOptions val_options = window_options;
  val_options.shuffle = false;
  const TokenWindows val_windows(text.val, val_options);
  const int64_t steps_per_epoch =
      o.steps_per_epoch > 0 ? o.steps_per_epoch : train_windows.batches();
  const int64_t tokens_per_step = o.batch_size * context;

  std::mt19937 rng(o.seed);
  nn::Gpt model(config, rng, device, o.checkpoint_activations);
  const auto optimizer = optim::make_optimizer(
      {.name = o.optimizer, .lr = o.lr, .momentum = o.mom, .weight_decay = o.wd},
      model.state().parameters);
  const int64_t total_steps = o.epochs * steps_per_epoch;
  const std::shared_ptr<const optim::Schedule> schedule = optim::with_warmup(
      optim::cosine_schedule(o.lr, total_steps, o.lr / 10), std::min(o.warmup_steps, total_steps));

  train::LoopHooks hooks;
  int64_t next_window_batch = 0;
  hooks.start_epoch = [&](int64_t epoch, int64_t first_batch) {
    train_windows.set_epoch(epoch);
    next_window_batch = first_batch;
  };
  hooks.step = [&](train::StepPhases& phases) {
    phases.start(train::Phase::kLoad);
    const NextTokenBatch batch = next_token_batch(
        train_windows.batch(next_window_batch++ % train_windows.batches()), device);
    phases.start(train::Phase::kForward);
    model.zero_grad();
    const LanguageModelStep s = forward(model, batch, o);
    phases.start(train::Phase::kBackward);
    model.backward(softmax_cross_entropy_backward(s.loss, batch.targets, 0.0f, s.logits.dtype())
                       .view({o.batch_size, context, config.vocabulary}));
    phases.start(train::Phase::kOptimizer);
    optimizer->step();
    return s.loss.loss;
  };
  hooks.validate = [&] { return validate_text(model, val_windows, device, o); };
  hooks.profiled = [](int64_t step) { return step >= 2 && step < 14; };
  train::TrainingLoop loop(o,
                           {.device = device,
                            .model = &model,
                            .optimizer = optimizer.get(),
                            .lr_at = [&](int64_t step) { return schedule->lr_at(step); },
                            .steps_per_epoch = steps_per_epoch,
                            .global_batch = tokens_per_step,
                            .unit = "tokens",
                            .identity = {{"model", o.model}, {"context", context}}},
                           hooks);

  GptLabResult result;
  result.unigram_entropy = unigram_entropy(text.val);
  std::printf(
      "training %s (%.2fM parameters%s) on %s: %lld training and %lld validation tokens, batch "
      "%lld "
      "x %lld tokens, %lld steps per epoch, %s\n",
      o.model.c_str(), nn::gpt_parameter_count(config) / 1e6,
      o.checkpoint_activations ? ", checkpointed blocks" : "", device.str().c_str(),
      static_cast<long long>(text.train.numel()), static_cast<long long>(text.val.numel()),
      static_cast<long long>(o.batch_size), static_cast<long long>(context),
      static_cast<long long>(steps_per_epoch), o.optimizer.c_str());
  std::fflush(stdout);

  const train::LoopResult run = loop.run();
  result.steps = run.steps;
  result.last_loss = run.last_loss;
  result.val_loss = run.test_loss;
  result.timing = run.timing;
  if (run.test_loss) {
    std::printf("validation loss %.3f nats per token (unigram entropy %.3f; %.2f bits per byte)\n",
                *run.test_loss, result.unigram_entropy, *run.test_loss / std::log(2.0));
  }
  if (o.sample_tokens > 0) {
    const Tensor prompt = encode_bytes(o.prompt);
    const std::vector<int32_t> tokens =
        nn::generate(model, prompt.to_vector<int32_t>(),
                     {.tokens = o.sample_tokens, .temperature = o.temperature, .seed = o.seed});
    result.sample = decode_bytes(tokens);
    std::printf("sample (temperature %.2f):\n%s\n", o.temperature, result.sample.c_str());
  }
  return result;
}

}  // namespace day4
