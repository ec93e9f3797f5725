// Running a GPT stage over a step's micro-batches.
#include "common/parallel/pipeline_parallel.h"

#include <algorithm>
#include <limits>

#include "common/core/activity_log.h"
#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"

namespace course::parallel {

namespace {

using Clock = std::chrono::steady_clock;

// Tags: micro-batch m's activation 2m, its gradient 2m + 1.
int activation_tag(int m) { return 2 * m; }
int gradient_tag(int m) { return 2 * m + 1; }

// What crosses between stages: f32 (the residual stream, whatever autocast computed in).
Tensor as_f32(const Tensor& t) { return nn::as_dtype(t, DType::kF32); }

// The blocks of each stage: `blocks[s]` of them, in order.
std::vector<nn::StageBounds> bounds_of(const std::vector<int64_t>& blocks) {
  std::vector<nn::StageBounds> out;
  int64_t first = 0;
  for (size_t s = 0; s < blocks.size(); ++s) {
    out.push_back({first, first + blocks[s], s == 0, s + 1 == blocks.size()});
    first += blocks[s];
  }
  return out;
}

// Contiguous cut of the blocks minimising the largest stage's parameters (dynamic programming
// over stages and blocks used).
std::vector<int64_t> blocks_by_parameters(const nn::GptConfig& c, int stages) {
  const int64_t layers = c.layers, block = 12 * c.channels * c.channels + 13 * c.channels;
  const int64_t table = c.vocabulary * c.channels;
  const int64_t first_extra = table + c.context * c.channels;
  const int64_t last_extra = 2 * c.channels + (stages > 1 ? table : 0);  // ln_f, the table copy
  const auto cost = [&](int s, int64_t blocks) {
    return blocks * block + (s == 0 ? first_extra : 0) + (s == stages - 1 ? last_extra : 0);
  };
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  // best[s][b]: the smallest largest stage when stages 0..s-1 hold the first b blocks.
  std::vector<std::vector<int64_t>> best(stages + 1, std::vector<int64_t>(layers + 1, kNone));
  std::vector<std::vector<int64_t>> take(stages + 1, std::vector<int64_t>(layers + 1, 0));
  best[0][0] = 0;
  for (int s = 0; s < stages; ++s) {
    for (int64_t used = 0; used <= layers; ++used) {
      if (best[s][used] == kNone) continue;
      for (int64_t n = 1; used + n <= layers; ++n) {
        const int64_t worst = std::max(best[s][used], cost(s, n));
        if (worst < best[s + 1][used + n]) {
          best[s + 1][used + n] = worst;
          take[s + 1][used + n] = n;
        }
      }
    }
  }
  std::vector<int64_t> blocks(stages);
  for (int64_t s = stages, used = layers; s > 0; --s) {
    blocks[s - 1] = take[s][used];
    used -= blocks[s - 1];
  }
  return blocks;
}

}  // namespace

std::vector<nn::StageBounds> split_stages(const nn::GptConfig& config, int stages,
                                          const std::string& balance) {
  COURSE_CHECK(stages >= 1 && stages <= config.layers, "a GPT of ", config.layers,
               " blocks does not split into ", stages, " pipeline stages of at least one block");
  if (balance == "parameters") return bounds_of(blocks_by_parameters(config, stages));
  COURSE_CHECK(balance == "layers", "unknown pipeline balance '", balance,
               "' (known: layers, parameters)");
  std::vector<int64_t> blocks(stages, config.layers / stages);
  for (int s = 0; s < config.layers % stages; ++s) ++blocks[s];
  return bounds_of(blocks);
}

PipelineParallel::PipelineParallel(nn::Gpt& gpt, std::shared_ptr<Communicator> pp,
                                   const PipelineOptions& options)
    : gpt_(gpt),
      pp_(std::move(pp)),
      options_(options),
      stage_(gpt, split_stages(gpt.config(), pp_->size(), options.balance).at(pp_->rank())),
      channels_(gpt.config().channels) {
  COURSE_CHECK(options.micro_batches >= 1, "a pipeline needs at least one micro-batch, got ",
               options.micro_batches);
  const int rank = pp_->rank(), last = pp_->size() - 1;
  if (last > 0) embedding_group_ = pp_->split(rank == 0 || rank == last ? 0 : 1, rank);
}

float PipelineParallel::forward_backward(const Tensor& tokens, const Tensor& targets) {
  const int m = options_.micro_batches;
  COURSE_CHECK(tokens.dim() == 2 && tokens.size(0) % m == 0 && targets.numel() == tokens.numel(),
               "a batch of ", tokens.str(), " tokens and ", targets.str(),
               " targets does not split into ", m, " micro-batches");
  micro_batch_size_ = tokens.size(0) / m;
  sequence_ = tokens.size(1);
  contexts_ = std::vector<nn::Context>(m);
  logits_.assign(m, Tensor());
  losses_.assign(m, {});
  loss_sum_ = zeros({1}, DType::kF32, tokens.device());
  timeline_.clear();
  step_start_ = Clock::now();
  for (const PipelineAction& a : schedule_actions(options_.schedule, pp_->rank(), pp_->size(), m)) {
    if (a.kind == PipelineAction::Kind::kForward) {
      forward(a.micro_batch, tokens, targets);
    } else {
      backward(a.micro_batch, targets);
    }
  }
  for (const WorkPtr& send : sends_) send->wait();
  sends_.clear();
  step_seconds_ = std::chrono::duration<double>(Clock::now() - step_start_).count();
  add_tied_embedding_gradients();
  pp_->broadcast(loss_sum_, pp_->size() - 1)->wait();
  return loss_sum_.to_vector<float>()[0];
}

Tensor PipelineParallel::micro_batch_of(const Tensor& t, int micro) const {
  // (B, T) tokens are cut along B, (B * T,) targets in rows of T.
  const int64_t rows = t.dim() == 2 ? micro_batch_size_ : micro_batch_size_ * sequence_;
  return t.slice(micro * rows, (micro + 1) * rows);
}

void PipelineParallel::forward(int micro, const Tensor& tokens, const Tensor& targets) {
  const bool first = pp_->rank() == 0, last = pp_->rank() == pp_->size() - 1;
  Tensor input;
  if (first) {
    input = micro_batch_of(tokens, micro);
  } else {
    input = Tensor::empty({micro_batch_size_, sequence_, channels_}, DType::kF32, tokens.device());
    pp_->recv(input, pp_->rank() - 1, activation_tag(micro))->wait();
  }
  const auto start = Clock::now();
  Tensor output = stage_.forward(input, contexts_[micro]);
  if (last) {
    const Tensor rows = output.view({output.numel() / output.size(-1), output.size(-1)});
    losses_[micro] = softmax_cross_entropy(rows, micro_batch_of(targets, micro));
    axpy_(1.0f / static_cast<float>(options_.micro_batches), losses_[micro].loss, loss_sum_);
    logits_[micro] = output;
  }
  record({PipelineAction::Kind::kForward, micro}, start);
  if (!last) {
    sends_.push_back(pp_->send(as_f32(output), pp_->rank() + 1, activation_tag(micro)));
  }
}

void PipelineParallel::backward(int micro, const Tensor& targets) {
  const bool first = pp_->rank() == 0, last = pp_->rank() == pp_->size() - 1;
  Tensor dy;
  if (last) {
    const Tensor& logits = logits_[micro];
    dy = softmax_cross_entropy_backward(losses_[micro], micro_batch_of(targets, micro), 0.0f,
                                        logits.dtype(),
                                        1.0f / static_cast<float>(options_.micro_batches))
             .view(logits.shape());
    logits_[micro] = Tensor();
    losses_[micro] = {};
  } else {
    dy = Tensor::empty({micro_batch_size_, sequence_, channels_}, DType::kF32, targets.device());
    pp_->recv(dy, pp_->rank() + 1, gradient_tag(micro))->wait();
  }
  const auto start = Clock::now();
  const Tensor dx = stage_.backward(dy, contexts_[micro]);
  record({PipelineAction::Kind::kBackward, micro}, start);
  if (!first) sends_.push_back(pp_->send(as_f32(dx), pp_->rank() - 1, gradient_tag(micro)));
}

void PipelineParallel::record(PipelineAction action, Clock::time_point start) {
  const auto end = Clock::now();
  const auto since_step = [&](Clock::time_point t) {
    return std::chrono::duration<double>(t - step_start_).count();
  };
  timeline_.push_back({action, since_step(start), since_step(end)});
  ActivityLog::instance().add({(action.kind == PipelineAction::Kind::kForward ? "F" : "B") +
                                   std::to_string(action.micro_batch),
                               false, start, end});
}

void PipelineParallel::add_tied_embedding_gradients() {
  nn::Parameter* table = stage_.token_embedding();
  if (!embedding_group_ || !table) return;
  embedding_group_->allreduce(table->grad)->wait();
}

void PipelineParallel::gather_model() {
  const std::vector<nn::StageBounds> stages =
      split_stages(gpt_.config(), pp_->size(), options_.balance);
  for (int s = 0; s < pp_->size(); ++s) {
    nn::GptStage stage(gpt_, stages[s]);
    const bool table_copy = stages[s].head && !stages[s].embedding;  // the first stage's table
    for (nn::Parameter* parameter : stage.parameters()) {
      if (table_copy && parameter == stage.token_embedding()) continue;
      pp_->broadcast(parameter->value, s)->wait();
    }
  }
}

double PipelineParallel::measured_bubble() const {
  double compute = 0;
  for (const TimedAction& a : timeline_) compute += a.end_s - a.start_s;
  return step_seconds_ > 0 ? 1.0 - compute / step_seconds_ : 0.0;
}

}  // namespace course::parallel
