// The GPT lab's wiring on the shared training loop (common/train/training_loop.h).
#include "day4_large_models/gpt_trainer.h"

#include <cmath>
#include <cstdio>

#include "common/data/text_corpus.h"
#include "common/data/token_windows.h"
#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"
#include "common/nn/generate.h"
#include "common/nn/gpt.h"
#include "common/optim/make_optimizer.h"
#include "common/optim/schedule.h"
#include "common/parallel/rank_setup.h"
#include "common/train/training_state.h"
#include "day4_large_models/memory_report.h"
#include "day4_large_models/model_parallel_mode.h"
#include "day4_large_models/parallel_modes.h"
#include "day4_large_models/throughput_report.h"

namespace day4 {

using namespace course;

namespace {

struct LanguageModelStep {
  Tensor logits;  // (B T, V)
  CrossEntropyOutput loss;
};

LanguageModelStep forward(nn::Module& net, const NextTokenBatch& batch, const GptLabOptions& o) {
  nn::Autocast autocast(o.amp_dtype, o.amp);
  const Tensor logits = net.forward(batch.inputs);
  const Tensor rows = logits.view({batch.targets.numel(), logits.shape().back()});
  return {rows, softmax_cross_entropy(rows, batch.targets)};
}

// Validation over every window of the held-out text: loss and next-token accuracy per token.
train::EvalTally validate_text(nn::Module& net, const TokenWindows& windows, Device device,
                               const GptLabOptions& o) {
  net.set_training(false);
  train::EvalTally tally;
  for (int64_t b = 0; b < windows.batches(); ++b) {
    const NextTokenBatch batch = next_token_batch(windows.batch(b), device);
    const LanguageModelStep s = forward(net, batch, o);
    tally.correct += train::count_correct(s.logits, batch.targets);
    tally.loss_sum += static_cast<double>(s.loss.host_loss()) * batch.targets.numel();
    tally.samples += batch.targets.numel();
  }
  net.set_training(true);
  return tally;
}

}  // namespace

GptLabResult run_gpt_lab(const GptLabOptions& o) {
  validate(o);
  const auto comm = parallel::Communicator::world();
  const Device device = parallel::set_up_rank(*comm, o.comm_timeout, o.device);
  const bool lead = comm->rank() == 0;
  if (o.throughput_gpus > 0) {
    if (lead) print_throughput_table(o, o.throughput_gpus);
    return {};
  }
  // The memory estimate, once per run: for --estimate-ranks with --estimate-only, else for the
  // run's ranks.
  const int ranks_estimated =
      o.estimate_only && o.estimate_ranks > 0 ? o.estimate_ranks : comm->size();
  const parallel::MemoryEstimate estimate =
      parallel::estimate_memory(memory_plan(o, ranks_estimated));
  if (o.estimate_only) {
    if (lead) print_memory_estimate(o, ranks_estimated, estimate);
    return {};
  }
  COURSE_CHECK(o.sharding == "none" || comm->size() > 1, "--sharding ", o.sharding,
               " shards over the data-parallel ranks and needs at least 2; this run has 1 "
               "(start it with mpirun -np N, or srun)");
  enforce_memory_budget(o, comm->size(), estimate, device);
  const nn::GptConfig config = nn::gpt_preset(o.model);
  const int64_t context = o.context > 0 ? o.context : config.context;

  const TokenSplit text = split_documents(load_fortunes(o.text_dir), o.val_fraction, o.seed);
  const int64_t resident = device_allocator(device).stats().allocated;  // the text, on the CPU
  std::mt19937 rng(o.seed);
  nn::Gpt model(config, rng, device, o.checkpoint_activations);
  // Either data parallelism (DDP or sharded) over every rank, or model parallelism (tensor,
  // model_parallel) on a grid with data-parallel replicas.
  std::unique_ptr<ModelParallelMode> model_parallel;
  std::unique_ptr<parallel::DataParallelStep> data_parallel;
  if (o.pipeline_stages > 1 || o.tensor_parallel > 1) {
    model_parallel = std::make_unique<ModelParallelMode>(model, comm, o);
  } else {
    data_parallel = make_data_parallel(model, comm, o);
  }
  const int data_rank = model_parallel ? model_parallel->data_rank() : comm->rank();
  const int data_ranks = model_parallel ? model_parallel->data_ranks() : comm->size();
  // A model-parallel step takes its micro-batches at once; a data-parallel one one at a time.
  const int64_t windows_per_batch =
      o.batch_size * (model_parallel ? model_parallel->micro_batches() : 1);
  const int64_t batches_per_step = model_parallel ? 1 : o.accumulate;

  const TokenWindowOptions window_options{
      .batch_size = windows_per_batch, .context = context, .seed = o.seed};
  TokenWindows train_windows(text.train, window_options, data_rank, data_ranks);
  TokenWindowOptions val_options = window_options;
  val_options.batch_size = o.batch_size;
  val_options.shuffle = false;
  const TokenWindows val_windows(text.val, val_options, comm->rank(), comm->size());
  const int64_t steps_per_epoch =
      o.steps_per_epoch > 0 ? o.steps_per_epoch : train_windows.batches();
  const int64_t tokens_per_step = windows_per_batch * context * data_ranks * batches_per_step;

  const auto optimizer = optim::make_optimizer(
      {.name = o.optimizer, .lr = o.lr, .momentum = o.mom, .weight_decay = o.wd},
      model_parallel ? model_parallel->optimized() : data_parallel->optimized());
  const int64_t total_steps = o.epochs * steps_per_epoch;
  const std::shared_ptr<const optim::Schedule> schedule = optim::with_warmup(
      optim::cosine_schedule(o.lr, total_steps, o.lr / 10), std::min(o.warmup_steps, total_steps));

  // A sharded or model-parallel run's checkpoint is a file per rank: its shards or its stage's
  // slices, and its optimizer's state.
  nlohmann::json identity = {{"model", o.model}, {"context", context}};
  std::function<train::NamedTensors()> rank_state;
  if (model_parallel) {
    identity["tensor_parallel"] = o.tensor_parallel;
    identity["pipeline_stages"] = o.pipeline_stages;
    identity["pipeline_balance"] = o.pipeline_balance;
    rank_state = [&] {
      return train::sharded_training_state(model_parallel->optimized(), *optimizer);
    };
  } else if (data_parallel->shard_group_size() > 0) {
    identity["sharding"] = o.sharding;
    identity["shard_group_size"] = data_parallel->shard_group_size();
    rank_state = [&] {
      return train::sharded_training_state(data_parallel->optimized(), *optimizer);
    };
  }
  train::LoopHooks hooks;
  int64_t next_window_batch = 0;
  hooks.start_epoch = [&](int64_t epoch, int64_t first_batch) {
    train_windows.set_epoch(epoch);
    next_window_batch = first_batch;
  };
  const auto next_batch = [&] {
    return next_token_batch(train_windows.batch(next_window_batch++ % train_windows.batches()),
                            device);
  };
  hooks.step = [&](train::StepPhases& phases) {
    if (model_parallel) {
      phases.start(train::Phase::kLoad);
      const NextTokenBatch batch = next_batch();
      phases.start(train::Phase::kPipeline);
      model_parallel->zero_grad();
      Tensor loss;
      {
        nn::Autocast autocast(o.amp_dtype, o.amp);
        loss = model_parallel->forward_backward(batch, device);
      }
      phases.start(train::Phase::kOptimizer);
      optimizer->step();
      return loss;
    }
    // Micro-batches add into the gradients; DDP reduces only after the last one.
    nn::Module& net = data_parallel->net();
    Tensor loss = zeros({1}, DType::kF32, device);
    for (int64_t micro = 0; micro < o.accumulate; ++micro) {
      phases.start(train::Phase::kLoad);
      const NextTokenBatch batch = next_batch();
      phases.start(train::Phase::kForward);
      if (micro == 0) net.zero_grad();
      data_parallel->set_sync(micro + 1 == o.accumulate);
      const LanguageModelStep s = forward(net, batch, o);
      axpy_(1.0f / static_cast<float>(o.accumulate), s.loss.loss, loss);
      phases.start(train::Phase::kBackward);
      net.backward(softmax_cross_entropy_backward(s.loss, batch.targets, 0.0f, s.logits.dtype(),
                                                  1.0f / static_cast<float>(o.accumulate))
                       .view({o.batch_size, context, config.vocabulary}));
    }
    data_parallel->finish_backward();
    phases.start(train::Phase::kOptimizer);
    optimizer->step();
    data_parallel->after_step();
    return loss;
  };
  // The model validation and sampling run: a pipeline's stages and tensor-parallel slices gathered
  // into every rank's whole model first; the data-parallel wrapper (which gathers a sharded
  // model's blocks itself).
  const auto whole_model = [&]() -> nn::Module& {
    if (!model_parallel) return data_parallel->net();
    model_parallel->gather_model();
    return model;
  };
  hooks.validate = [&] { return validate_text(whole_model(), val_windows, device, o); };
  hooks.profiled = [](int64_t step) { return step >= 2 && step < 14; };
  train::TrainingLoop loop(o,
                           {.device = device,
                            .model = &model,
                            .optimizer = optimizer.get(),
                            .lr_at = [&](int64_t step) { return schedule->lr_at(step); },
                            .steps_per_epoch = steps_per_epoch,
                            .global_batch = tokens_per_step,
                            .unit = "tokens",
                            .identity = identity,
                            .comm = comm.get(),
                            .rank_state = rank_state},
                           hooks);
  // A resumed run loaded its shards: the modes that keep full values (ZeRO-1 and 2) refresh
  // them, as after an optimizer step, before the first forward uses them.
  if (!o.resume.empty() && data_parallel) data_parallel->after_step();

  GptLabResult result;
  result.unigram_entropy = unigram_entropy(text.val);
  if (lead) {
    if (data_parallel) print_memory_estimate(o, comm->size(), estimate);
    std::printf(
        "training %s (%.2fM parameters%s) on %s, %s: %lld training and %lld validation tokens, "
        "batch %lld x %lld tokens per micro-batch, %lld micro-batch(es) per step, %lld steps per "
        "epoch, %s\n",
        o.model.c_str(), nn::gpt_parameter_count(config) / 1e6,
        o.checkpoint_activations ? ", checkpointed blocks" : "", device.str().c_str(),
        (model_parallel ? model_parallel->describe() : data_parallel->describe()).c_str(),
        static_cast<long long>(text.train.numel()), static_cast<long long>(text.val.numel()),
        static_cast<long long>(o.batch_size), static_cast<long long>(context),
        static_cast<long long>(model_parallel ? model_parallel->micro_batches() : o.accumulate),
        static_cast<long long>(steps_per_epoch), o.optimizer.c_str());
    std::fflush(stdout);
  }

  const train::LoopResult run = loop.run();
  result.steps = run.steps;
  result.last_loss = run.last_loss;
  result.val_loss = run.test_loss;
  result.timing = run.timing;
  if (lead && run.steps > 0 && comm->size() > 1) {
    std::printf("communication per step on rank 0: %.2f MiB sent (ring), %.1f ms waited for\n",
                (model_parallel ? model_parallel->step_bytes_sent() : comm->traffic().bytes) /
                    run.steps / 1048576.0,
                (model_parallel ? model_parallel->exposed_communication_seconds()
                                : data_parallel->exposed_communication_seconds()) *
                    1e3 / run.steps);
  }
  if (model_parallel && model_parallel->pipelined()) {
    model_parallel->print_measured_bubbles();
    if (!o.timeline.empty() && run.steps > 0) {
      model_parallel->write_timeline(
          o.timeline, o.model + ": " + model_parallel->describe() + ", the last step as measured");
    }
  }
  if (lead && run.steps > 0 && data_parallel) {
    print_measured_against_estimate(estimate, device, run.timing.max_memory_allocated, resident);
  }
  if (run.test_loss && lead) {
    std::printf("validation loss %.3f nats per token (unigram entropy %.3f; %.2f bits per byte)\n",
                *run.test_loss, result.unigram_entropy, *run.test_loss / std::log(2.0));
  }
  if (o.sample_tokens > 0) {
    const Tensor prompt = encode_bytes(o.prompt);
    // Every rank samples the same tokens: the sharded modes gather parameters collectively.
    const std::vector<int32_t> tokens =
        nn::generate(whole_model(), config, device, prompt.to_vector<int32_t>(),
                     {.tokens = o.sample_tokens, .temperature = o.temperature, .seed = o.seed});
    result.sample = decode_bytes(tokens);
    if (lead) std::printf("sample (temperature %.2f):\n%s\n", o.temperature, result.sample.c_str());
  }
  return result;
}

}  // namespace day4
