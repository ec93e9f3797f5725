// Running a GPT stage over a step's micro-batches.
#include "common/parallel/pipeline_parallel.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "common/core/activity_log.h"
#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"

namespace course::parallel {

namespace {

using Clock = std::chrono::steady_clock;

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
  const nn::GptParameterParts parts = nn::gpt_parameter_parts(c);
  const int64_t layers = c.layers, block = parts.block;
  const int64_t first_extra = parts.token_table + parts.position_table;
  // The final norm and the output layer: its own, or a copy of the tied table.
  const int64_t tied_copy = c.tied_head && stages > 1 ? parts.token_table : 0;
  const int64_t last_extra = parts.final_norm + parts.output_layer + tied_copy;
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

std::string stage_balance_name(StageBalance balance) {
  return balance == StageBalance::kParameters ? "parameters" : "layers";
}

std::vector<nn::StageBounds> split_stages(const nn::GptConfig& config, int stages,
                                          StageBalance balance) {
  COURSE_CHECK(stages >= 1 && stages <= config.layers, "a GPT of ", config.layers,
               " blocks does not split into ", stages, " pipeline stages of at least one block");
  if (balance == StageBalance::kParameters) {
    return bounds_of(blocks_by_parameters(config, stages));
  }
  std::vector<int64_t> blocks(stages, config.layers / stages);
  for (int s = 0; s < config.layers % stages; ++s) ++blocks[s];
  return bounds_of(blocks);
}

PipelineParallel::PipelineParallel(nn::GptParts& gpt, std::shared_ptr<Communicator> pp,
                                   const PipelineOptions& options)
    : gpt_(gpt), pp_(std::move(pp)), options_(options), channels_(gpt.config().channels) {
  COURSE_CHECK(options.micro_batches >= 1 && options.virtual_stages >= 1,
               "a pipeline needs at least one micro-batch and one chunk per rank, got ",
               options.micro_batches, " and ", options.virtual_stages);
  // This rank's point-to-point timetable, from every stage's actions (the schedules check their
  // shape, micro-batches and virtual stages, before anything runs).
  std::vector<std::vector<PipelineAction>> every_stage;
  for (int s = 0; s < pp_->size(); ++s) {
    every_stage.push_back(schedule_actions(options.schedule, s, pp_->size(), options.micro_batches,
                                           options.virtual_stages));
  }
  rounds_ = pipeline_rounds(every_stage, options.virtual_stages)[pp_->rank()];
  const std::vector<nn::StageBounds> stages =
      split_stages(gpt.config(), pp_->size() * options.virtual_stages, options.balance);
  for (int c = 0; c < options.virtual_stages; ++c) {
    chunks_.push_back(std::make_unique<nn::GptStage>(gpt, stages[virtual_stage(c)]));
  }
  const int rank = pp_->rank(), last = pp_->size() - 1;
  // The first and last stages share the token table of a tied output layer.
  if (last > 0 && gpt.config().tied_head) {
    embedding_group_ = pp_->split(rank == 0 || rank == last ? 0 : 1, rank);
  }
}

std::vector<std::pair<std::string, nn::Parameter*>> PipelineParallel::parameters() {
  std::vector<std::pair<std::string, nn::Parameter*>> out;
  for (const auto& chunk : chunks_) {
    for (const auto& named : chunk->state().parameters) {
      // One rank holding both ends of the model sees the tied table twice.
      const bool seen = std::any_of(out.begin(), out.end(),
                                    [&](const auto& o) { return o.second == named.second; });
      if (!seen) out.push_back(named);
    }
  }
  return out;
}

void PipelineParallel::zero_grad() {
  for (const auto& chunk : chunks_) chunk->zero_grad();
}

int PipelineParallel::tag(const StageMessage& message) const {
  return 2 * (message.to * options_.micro_batches + message.micro_batch) +
         (message.gradient ? 1 : 0);
}

float PipelineParallel::forward_backward(const Tensor& tokens, const Tensor& targets) {
  const int m = options_.micro_batches, v = options_.virtual_stages, p = pp_->size();
  COURSE_CHECK(tokens.dim() == 2 && tokens.size(0) % m == 0 && targets.numel() == tokens.numel(),
               "a batch of ", tokens.str(), " tokens and ", targets.str(),
               " targets does not split into ", m, " micro-batches");
  const NextTokenBatch batch{tokens, targets};
  micro_batch_size_ = tokens.size(0) / m;
  sequence_ = tokens.size(1);
  contexts_ = std::vector<nn::Context>(m * v);
  logits_.assign(m, Tensor());
  losses_.assign(m, {});
  loss_sum_ = zeros({1}, DType::kF32, tokens.device());
  timeline_.clear();
  step_start_ = Clock::now();
  std::map<StageMessage, Tensor> inbox;
  for (const PipelineRound& round : rounds_) {
    Tensor produced;
    if (round.action) produced = run(*round.action, batch, inbox);
    std::vector<PeerTransfer> group;
    for (const StageMessage& out : round.sends) {
      group.push_back(send_to(as_f32(produced), out.to % p, tag(out)));
    }
    for (const StageMessage& in : round.receives) {
      Tensor& landing = inbox[in] =
          Tensor::empty({micro_batch_size_, sequence_, channels_}, DType::kF32, tokens.device());
      const int from = (in.gradient ? in.to + 1 : in.to - 1) % p;
      group.push_back(receive_from(landing, from, tag(in)));
    }
    if (!group.empty()) pp_->exchange(group)->wait();
  }
  step_seconds_ = std::chrono::duration<double>(Clock::now() - step_start_).count();
  add_tied_embedding_gradients();
  pp_->broadcast(loss_sum_, pp_->size() - 1)->wait();
  return loss_sum_.to_vector<float>()[0];
}

Tensor PipelineParallel::run(const PipelineAction& a, const NextTokenBatch& batch,
                             std::map<StageMessage, Tensor>& inbox) {
  Tensor received;
  if (const auto input = action_input(a, pp_->rank(), pp_->size(), options_.virtual_stages)) {
    const auto it = inbox.find(*input);
    received = std::move(it->second);
    inbox.erase(it);
  }
  return a.kind == PipelineAction::Kind::kForward ? forward(a, batch, received)
                                                  : backward(a, batch, received);
}

Tensor PipelineParallel::forward(const PipelineAction& a, const NextTokenBatch& batch,
                                 const Tensor& received) {
  const int at = virtual_stage(a.chunk), micro = a.micro_batch;
  const NextTokenBatch part = micro_batch_of(batch, micro, options_.micro_batches);
  const Tensor input = at == 0 ? part.inputs : received;
  const auto start = Clock::now();
  Tensor output =
      chunks_[a.chunk]->forward(input, contexts_[a.chunk * options_.micro_batches + micro]);
  if (at == last_virtual_stage()) {
    const Tensor rows = output.view({output.numel() / output.size(-1), output.size(-1)});
    losses_[micro] = softmax_cross_entropy(rows, part.targets);
    axpy_(1.0f / static_cast<float>(options_.micro_batches), losses_[micro].loss, loss_sum_);
    logits_[micro] = output;
    output = Tensor();
  }
  record(a, start);
  return output;
}

Tensor PipelineParallel::backward(const PipelineAction& a, const NextTokenBatch& batch,
                                  const Tensor& received) {
  const int at = virtual_stage(a.chunk), micro = a.micro_batch;
  Tensor dy = received;
  if (at == last_virtual_stage()) {
    const Tensor& logits = logits_[micro];
    const Tensor micro_targets = micro_batch_of(batch, micro, options_.micro_batches).targets;
    dy = softmax_cross_entropy_backward(losses_[micro], micro_targets, 0.0f, logits.dtype(),
                                        1.0f / static_cast<float>(options_.micro_batches))
             .view(logits.shape());
    logits_[micro] = Tensor();
    losses_[micro] = {};
  }
  const auto start = Clock::now();
  Tensor dx = chunks_[a.chunk]->backward(dy, contexts_[a.chunk * options_.micro_batches + micro]);
  record(a, start);
  return at > 0 ? dx : Tensor();
}

void PipelineParallel::record(const PipelineAction& action, Clock::time_point start) {
  const auto end = Clock::now();
  const auto since_step = [&](Clock::time_point t) {
    return std::chrono::duration<double>(t - step_start_).count();
  };
  timeline_.push_back({action, since_step(start), since_step(end)});
  std::string name = (action.kind == PipelineAction::Kind::kForward ? "F" : "B") +
                     std::to_string(action.micro_batch);
  if (options_.virtual_stages > 1) name += " c" + std::to_string(action.chunk);
  ActivityLog::instance().add({name, false, start, end});
}

void PipelineParallel::add_tied_embedding_gradients() {
  if (!embedding_group_) return;
  for (const auto& chunk : chunks_) {
    if (nn::Parameter* table = chunk->token_embedding()) {
      embedding_group_->allreduce(table->grad)->wait();
      return;
    }
  }
}

void PipelineParallel::gather_model() {
  const int p = pp_->size();
  const std::vector<nn::StageBounds> stages =
      split_stages(gpt_.config(), p * options_.virtual_stages, options_.balance);
  for (size_t at = 0; at < stages.size(); ++at) {
    nn::GptStage stage(gpt_, stages[at]);
    const bool table_copy = stages[at].head && !stages[at].embedding;  // the first stage's table
    for (nn::Parameter* parameter : stage.parameters()) {
      if (table_copy && parameter == stage.token_embedding()) continue;
      pp_->broadcast(parameter->value, static_cast<int>(at) % p)->wait();
    }
  }
}

double PipelineParallel::measured_bubble() const {
  double compute = 0;
  for (const TimedAction& a : timeline_) compute += a.end_s - a.start_s;
  return step_seconds_ > 0 ? 1.0 - compute / step_seconds_ : 0.0;
}

}  // namespace course::parallel
