// The GPT lab's wiring on the shared training loop (common/train/training_loop.h): the text
// windows, the model, the parallelism its flags choose (one interface for every scheme:
// common/parallel/training_parallelism.h), the optimizer and its schedule, then the
// reports.
#include "day4_large_models/gpt_trainer.h"

#include <cmath>
#include <cstdio>

#include "common/core/launch_rank.h"
#include "common/data/text_corpus.h"
#include "common/data/token_windows.h"
#include "common/kernels/cross_entropy.h"
#include "common/models/gpt/generate.h"
#include "common/models/gpt/gpt.h"
#include "common/nn/autocast.h"
#include "common/parallel/gradient_clipping.h"
#include "common/parallel/planning/workload.h"
#include "common/train/model_flops.h"
#include "common/train/training_state.h"
#include "day4_large_models/lab_run.h"
#include "day4_large_models/memory_report.h"
#include "day4_large_models/parallel_modes.h"

namespace day4 {

using namespace course;

namespace {

// The GPT's training FLOPs per token at this context, attention's included (model_flops.h).
double training_flops_per_token(nn::GptConfig config, int64_t context) {
  config.context = context;
  return train::training_flops(parallel::gpt_workload(config).multiply_adds) /
         static_cast<double>(context);
}

// Validation over every window of the held-out text: loss and next-token accuracy per token.
train::EvalTally validate_text(nn::Module& net, const TokenWindows& windows, Device device,
                               const train::RunFlags& run) {
  net.set_training(false);
  train::EvalTally tally;
  for (int64_t b = 0; b < windows.batches(); ++b) {
    const NextTokenBatch batch = next_token_batch(windows.batch(b), device);
    nn::Autocast autocast(run.amp_dtype, run.amp);
    const Tensor logits = net.forward(batch.inputs);
    const Tensor rows = logits.view({batch.targets.numel(), logits.shape().back()});
    tally.correct += train::count_correct(rows, batch.targets);
    tally.loss_sum += static_cast<double>(softmax_cross_entropy(rows, batch.targets).host_loss()) *
                      batch.targets.numel();
    tally.samples += batch.targets.numel();
  }
  net.set_training(true);
  return tally;
}

// The run's text as windows: a step's batch (its micro-batches' windows) dealt over the
// data-parallel replicas, validation over every rank.
struct RunWindows {
  TokenWindows train, val;
  int64_t steps_per_epoch = 0;
  int64_t tokens_per_step = 0;  // over every replica
};

RunWindows run_windows(const TokenSplit& text, int64_t context, const GptLabOptions& o,
                       const parallel::TrainingParallelism& parallelism,
                       const parallel::Communicator& comm) {
  const int64_t windows_per_step = o.run.batch_size * parallelism.micro_batches();
  const TokenWindowOptions options{
      .batch_size = windows_per_step, .context = context, .seed = o.seed};
  TokenWindowOptions val_options = options;
  val_options.batch_size = o.run.batch_size;
  val_options.shuffle = false;
  RunWindows w{
      .train = TokenWindows(text.train, options, parallelism.data_rank(), parallelism.data_ranks()),
      .val = TokenWindows(text.val, val_options, comm.rank(), comm.size())};
  w.steps_per_epoch = o.steps_per_epoch > 0 ? o.steps_per_epoch : w.train.batches();
  w.tokens_per_step = windows_per_step * context * parallelism.data_ranks();
  return w;
}

// The lab's step on the loop: this replica's next batch, forward and backward under the chosen
// parallelism, the optimizer's step.
train::LoopHooks training_hooks(parallel::TrainingParallelism& parallelism, LabOptimizer& optimizer,
                                optim::GradientClipping& clipping, RunWindows& windows,
                                Device device, const train::RunFlags& run, bool cuda_graphs) {
  auto next_batch = std::make_shared<int64_t>(0);
  train::LoopHooks hooks;
  hooks.start_epoch = [&windows, next_batch](int64_t epoch, int64_t first_batch) {
    windows.train.set_epoch(epoch);
    *next_batch = first_batch;
  };
  auto step = std::make_shared<LabStep>(optimizer, clipping, parallelism, device, cuda_graphs);
  hooks.step = [step, &windows, next_batch, device](train::StepPhases& phases) {
    phases.start(Phase::kLoad);
    const NextTokenBatch batch =
        next_token_batch(windows.train.batch((*next_batch)++ % windows.train.batches()), device);
    return step->run(batch, phases);
  };
  hooks.validate = [&parallelism, &windows, device, &run, step] {
    const train::EvalTally tally =
        validate_text(parallelism.whole_model(), windows.val, device, run);
    step->recapture_after_outside_use();
    return tally;
  };
  hooks.profiled = [](int64_t step) { return step >= 2 && step < 14; };
  return hooks;
}

void print_run_header(const GptLabOptions& o, const nn::GptConfig& config, Device device,
                      const parallel::TrainingParallelism& parallelism, const TokenSplit& text,
                      const RunWindows& windows, int64_t context) {
  std::printf(
      "training %s (%.2fM parameters%s) on %s, %s: %lld training and %lld validation %stokens, "
      "batch %lld x %lld tokens per micro-batch, %lld micro-batch(es) per step, %lld steps per "
      "epoch, %s\n",
      o.model.name.c_str(), nn::gpt_parameter_count(config) / 1e6,
      o.model.checkpoint_activations ? ", checkpointed blocks" : "", device.str().c_str(),
      parallelism.describe().c_str(), static_cast<long long>(text.train.numel()),
      static_cast<long long>(text.val.numel()), o.text.synthetic_tokens > 0 ? "random " : "",
      static_cast<long long>(o.run.batch_size), static_cast<long long>(context),
      static_cast<long long>(parallelism.micro_batches()),
      static_cast<long long>(windows.steps_per_epoch), optim::optimizer_name(o.optimizer.kind));
  if (!o.config->file.empty()) std::printf("%s\n", o.config->summary().c_str());
  std::fflush(stdout);
}

// Collective (a sharded model gathers its parameters): every rank samples the same tokens; the
// first prints them.
std::string sample_text(nn::Module& model, const nn::GptConfig& config, Device device,
                        const SampleChoice& sample, uint32_t seed) {
  const std::vector<int32_t> tokens =
      nn::generate(model, config, device, encode_bytes(sample.prompt).to_vector<int32_t>(),
                   {.tokens = sample.tokens, .sampling = sample.sampling, .seed = seed});
  const std::string text = decode_bytes(tokens);
  if (parallel::Communicator::world()->rank() == 0) {
    std::printf("sample (temperature %.2f):\n%s\n", sample.sampling.temperature, text.c_str());
  }
  return text;
}

// The run's result: its losses (the validation loss printed beside the text's unigram entropy)
// and, with --sample-tokens, a sample from the whole model.
GptLabResult gpt_lab_result(const train::LoopResult& run, const TokenSplit& text,
                            parallel::TrainingParallelism& parallelism, const nn::GptConfig& config,
                            Device device, const SampleChoice& sample, uint32_t seed, bool lead) {
  GptLabResult result{.steps = run.steps,
                      .last_loss = run.last_loss,
                      .val_loss = run.test_loss,
                      .unigram_entropy = unigram_entropy(text.val),
                      .timing = run.timing};
  if (run.test_loss && lead) {
    std::printf("validation loss %.3f nats per token (unigram entropy %.3f", *run.test_loss,
                result.unigram_entropy);
    if (config.vocabulary == kByteVocabulary) {
      std::printf("; %.2f bits per byte", *run.test_loss / std::log(2.0));
    }
    std::printf(")\n");
  }
  if (sample.tokens > 0) {
    result.sample = sample_text(parallelism.whole_model(), config, device, sample, seed);
  }
  return result;
}

// The lab's text: a made-up corpus of random tokens (--synthetic-tokens), else the fortunes.
TokenSplit lab_text(const GptLabOptions& o, const nn::GptConfig& config) {
  if (o.text.synthetic_tokens > 0) {
    return random_tokens(o.text.synthetic_tokens, config.vocabulary, o.text.val_fraction, o.seed);
  }
  return split_documents(load_fortunes(o.text.dir), o.text.val_fraction, o.seed);
}

}  // namespace

GptLabResult run_gpt_lab(GptLabOptions o) {
  const EstimateFor estimate_for = [&o](int ranks) {
    return EstimatedRun{.estimate = parallel::estimate_memory(memory_plan(o, ranks)),
                        .parameters = nn::gpt_parameter_count(*o.model.language)};
  };
  const std::optional<LabStart> start = start_lab_run(o, estimate_for);
  if (!start) return {};
  const std::shared_ptr<parallel::Communicator> comm = start->comm;
  const Device device = start->device;
  const auto estimate =
      checked_estimate(o, comm->size(), device, o.grid.memory_estimated(), estimate_for);
  const nn::GptConfig& config = *o.model.language;
  const int64_t context = o.model.window();
  const TokenSplit text = lab_text(o, config);
  const int64_t resident = device_allocator(device).stats().allocated;  // the text, on the CPU
  std::mt19937 rng(o.seed);
  nn::Gpt model(config, rng, device, o.model.checkpoint_activations);
  const auto parallelism = make_parallelism(model, comm, {o.grid, o.data_parallel, o.run});
  RunWindows windows = run_windows(text, context, o, *parallelism, *comm);
  const train::LoopResult run = run_lab_loop(
      o,
      {.device = device,
       .model = &model,
       .parallelism = parallelism.get(),
       .steps_per_epoch = windows.steps_per_epoch,
       .global_batch = windows.tokens_per_step,
       .unit = "tokens",
       .flops_per_unit = training_flops_per_token(config, context),
       .identity = {{"model", o.model.name}, {"context", context}},
       .hooks =
           [&](LabOptimizer& optimizer, optim::GradientClipping& clipping) {
             return training_hooks(*parallelism, optimizer, clipping, windows, device, o.run,
                                   o.cuda_graphs);
           },
       .estimate = estimate,
       .parameters = nn::gpt_parameter_count(config),
       .resident = resident,
       .print_header =
           [&] { print_run_header(o, config, device, *parallelism, text, windows, context); }},
      comm);
  SampleChoice sample = o.sample;
  // A model of random tokens has nothing to say.
  if (o.text.synthetic_tokens > 0) sample.tokens = 0;
  return gpt_lab_result(run, text, *parallelism, config, device, sample, o.seed, comm->rank() == 0);
}

}  // namespace day4
