// Running a stage over a step's micro-batches.
#include "common/parallel/pipeline/pipeline_parallel.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/core/activity_log.h"
#include "common/data/token_windows.h"
#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/models/gpt/gpt_stage.h"
#include "common/nn/autocast.h"
#include "common/tensor/capture.h"

namespace course::parallel {

namespace {

using Clock = std::chrono::steady_clock;

// What crosses between stages: f32 (the residual stream, whatever autocast computed in).
Tensor as_f32(const Tensor& t) { return nn::as_dtype(t, DType::kF32); }

}  // namespace

PipelineParallel::PipelineParallel(nn::GptParts& gpt, std::shared_ptr<Communicator> pp,
                                   const PipelineOptions& options)
    : PipelineParallel(std::make_unique<nn::GptStages>(gpt), std::move(pp), options) {}

PipelineParallel::PipelineParallel(std::unique_ptr<nn::StagedModel> model,
                                   std::shared_ptr<Communicator> pp, const PipelineOptions& options)
    : model_(std::move(model)), pp_(std::move(pp)), options_(options) {
  COURSE_CHECK(options.micro_batches >= 1 && options.virtual_stages >= 1,
               "a pipeline needs at least one micro-batch and one chunk per rank, got ",
               options.micro_batches, " and ", options.virtual_stages);
  const PipelineHooks& hooks = options.hooks;
  const int p = pp_->size();
  COURSE_CHECK(!hooks.any() || options.virtual_stages == 1,
               "a pipeline from the exercises runs one model chunk per rank (gpipe or 1f1b), not ",
               options.virtual_stages);
  bounds_ = hooks.cut ? stage_bounds_of(hooks.cut(model_->multiply_adds(), p), p, model_->blocks())
                      : split_stages(*model_, p * options.virtual_stages, options.balance);
  // This rank's point-to-point timetable, from every stage's actions (the schedules check their
  // shape, micro-batches and virtual stages, before anything runs).
  std::vector<std::vector<PipelineAction>> every_stage;
  for (int s = 0; s < p; ++s) {
    every_stage.push_back(hooks.actions
                              ? hooks.actions(options.schedule, s, p, options.micro_batches)
                              : schedule_actions(options.schedule, s, p, options.micro_batches,
                                                 options.virtual_stages));
    check_action_list(every_stage.back(), s, options.micro_batches, options.virtual_stages);
  }
  rounds_ = pipeline_rounds(every_stage, options.virtual_stages)[pp_->rank()];
  split_backward_ = splits_backward(every_stage[pp_->rank()]);
  for (int c = 0; c < options.virtual_stages; ++c) {
    chunks_.push_back(model_->stage(bounds_[virtual_stage(c)]));
  }
  const int rank = pp_->rank(), last = pp_->size() - 1;
  if (last > 0 && model_->shared_by_ends() != nullptr) {
    ends_group_ = pp_->split(rank == 0 || rank == last ? 0 : 1, rank);
  }
}

std::vector<std::pair<std::string, nn::Parameter*>> PipelineParallel::parameters() {
  std::vector<std::pair<std::string, nn::Parameter*>> out;
  for (const auto& chunk : chunks_) {
    for (const auto& named : chunk->state().parameters) {
      // One rank holding both ends of the model sees a shared parameter twice.
      const bool seen = std::any_of(out.begin(), out.end(),
                                    [&](const auto& o) { return o.second == named.second; });
      if (!seen) out.push_back(named);
    }
  }
  return out;
}

std::vector<nn::Parameter*> PipelineParallel::parameters_counted_once() {
  bool holds_first = false;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    holds_first = holds_first || bounds_[virtual_stage(static_cast<int>(c))].first;
  }
  const nn::Parameter* shared = model_->shared_by_ends();
  std::vector<nn::Parameter*> out;
  for (const auto& [name, parameter] : parameters()) {
    if (parameter != shared || holds_first) out.push_back(parameter);
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

Tensor PipelineParallel::forward_backward(const Tensor& inputs, const Tensor& targets) {
  const int m = options_.micro_batches;
  micro_inputs_.clear();
  micro_targets_.clear();
  for (int micro = 0; micro < m; ++micro) {
    const NextTokenBatch part = micro_batch_of({inputs, targets}, micro, m);
    micro_inputs_.push_back(part.inputs);
    micro_targets_.push_back(part.targets);
  }
  contexts_ = std::vector<nn::Context>(m * options_.virtual_stages);
  weight_passes_ = std::vector<nn::WeightGradientQueue>(split_backward_ ? contexts_.size() : 0);
  logits_.assign(m, Tensor());
  losses_.assign(m, {});
  loss_sum_ = zeros({1}, DType::kF32, inputs.device());
  // A captured step's marks are dropped unread: a capture may not query its events, and its
  // replays run no host code that could mark them (the timeline stands aside).
  const bool captured = capturing();
  if (!captured) read_steps(false);  // the steps the device has finished, never waiting
  StepRecord& step = unread_.emplace_back();
  step.first = steps_run_++ == 0;
  step.launched = Clock::now();
  step.start = stamp(events_);
  std::map<StageMessage, Tensor> inbox;
  for (size_t r = 0; r < rounds_.size(); ++r) {
    const PipelineRound& round = rounds_[r];
    Tensor produced;
    if (round.action) produced = run(*round.action, inbox);
    const bool exchanges = !round.sends.empty() || !round.receives.empty();
    std::unique_ptr<Event> posted = exchanges ? stamp(events_) : nullptr;
    if (options_.hooks.exchange) {
      exchange_by_hook(round, produced, inbox);
      for (const PipelineAction& w : round.weight_passes) run(w, inbox);
    } else {
      // The weight passes run while the round's messages travel. MPI moves a message larger
      // than its eager limit only inside its calls (NCCL's stream needs none), so the passes
      // test the exchange between their layers: else a neighbour waits for them to end.
      const WorkPtr in_flight = post_exchange(round, produced, inbox);
      const auto progress = [&] {
        if (in_flight) in_flight->test();
      };
      for (const PipelineAction& w : round.weight_passes) run(w, inbox, progress);
      if (in_flight) in_flight->wait();
    }
    if (exchanges) {
      step.exchanges.push_back({static_cast<int>(r), std::move(posted), stamp(events_)});
    }
  }
  unread_.back().end = stamp(events_);
  if (captured) {
    give_back(unread_.back());
    unread_.pop_back();
  }
  add_shared_gradients();
  pp_->broadcast(loss_sum_, pp_->size() - 1)->wait();
  return loss_sum_;
}

Tensor PipelineParallel::landing(const StageMessage& message) const {
  const nn::StageBounds& receiver = bounds_[message.to];
  return model_->empty_activation(message.gradient ? receiver.end_block : receiver.first_block,
                                  micro_inputs_.front());
}

WorkPtr PipelineParallel::post_exchange(const PipelineRound& round, const Tensor& produced,
                                        std::map<StageMessage, Tensor>& inbox) {
  const int p = pp_->size();
  std::vector<PeerTransfer> group;
  for (const StageMessage& out : round.sends) {
    group.push_back(send_to(as_f32(produced), out.to % p, tag(out)));
  }
  for (const StageMessage& in : round.receives) {
    Tensor& arriving = inbox[in] = landing(in);
    group.push_back(receive_from(arriving, sender_of(in, p), tag(in)));
  }
  return group.empty() ? nullptr : pp_->exchange(group);
}

void PipelineParallel::exchange_by_hook(const PipelineRound& round, const Tensor& produced,
                                        std::map<StageMessage, Tensor>& inbox) {
  RoundTraffic traffic{.ran = round.action,
                       .produced = produced.defined() ? as_f32(produced) : produced};
  for (const StageMessage& in : round.receives) {
    (in.gradient ? traffic.gradient_in : traffic.activation_in) = inbox[in] = landing(in);
  }
  options_.hooks.exchange(traffic, *pp_);
}

Tensor PipelineParallel::run(const PipelineAction& a, std::map<StageMessage, Tensor>& inbox,
                             const std::function<void()>& progress) {
  Tensor received;
  if (const auto input = action_input(a, pp_->rank(), pp_->size(), options_.virtual_stages)) {
    const auto it = inbox.find(*input);
    received = std::move(it->second);
    inbox.erase(it);
  }
  switch (a.kind) {
    case PipelineAction::Kind::kForward:
      return forward(a, received);
    case PipelineAction::Kind::kBackward:
      return backward(a, received);
    case PipelineAction::Kind::kWeight:
      break;
  }
  const auto launched = Clock::now();
  std::unique_ptr<Event> start = stamp(events_);
  weight_passes_[a.chunk * options_.micro_batches + a.micro_batch].run(progress);
  record(a, std::move(start), launched);
  return Tensor();
}

Tensor PipelineParallel::forward(const PipelineAction& a, const Tensor& received) {
  const int at = virtual_stage(a.chunk), micro = a.micro_batch;
  const Tensor input = at == 0 ? micro_inputs_[micro] : received;
  const auto launched = Clock::now();
  std::unique_ptr<Event> start = stamp(events_);
  Tensor output =
      chunks_[a.chunk]->forward(input, contexts_[a.chunk * options_.micro_batches + micro]);
  if (at == last_virtual_stage()) {
    const Tensor rows = output.view({output.numel() / output.size(-1), output.size(-1)});
    losses_[micro] = softmax_cross_entropy(rows, micro_targets_[micro]);
    axpy_(1.0f / static_cast<float>(options_.micro_batches), losses_[micro].loss, loss_sum_);
    logits_[micro] = output;
  }
  record(a, std::move(start), launched);
  return output;
}

Tensor PipelineParallel::backward(const PipelineAction& a, const Tensor& received) {
  const int at = virtual_stage(a.chunk), micro = a.micro_batch;
  const auto launched = Clock::now();
  std::unique_ptr<Event> start = stamp(events_);
  Tensor dy = received;
  if (at == last_virtual_stage()) {
    const Tensor& logits = logits_[micro];
    dy = scaled_cross_entropy_backward(losses_[micro], micro_targets_[micro], 0.0f, logits.dtype(),
                                       1.0f / static_cast<float>(options_.micro_batches),
                                       loss_scale_)
             .view(logits.shape());
    logits_[micro] = Tensor();
    losses_[micro] = {};
  }
  const int call = a.chunk * options_.micro_batches + micro;
  // A split backward leaves the parameters' gradients to the action's weight pass.
  if (split_backward_) contexts_[call].defer_weight_gradients(&weight_passes_[call]);
  Tensor dx = chunks_[a.chunk]->backward(dy, contexts_[call]);
  if (split_backward_) contexts_[call].defer_weight_gradients(nullptr);
  record(a, std::move(start), launched);
  return at > 0 ? dx : Tensor();
}

void PipelineParallel::record(const PipelineAction& action, std::unique_ptr<Event> start,
                              Clock::time_point launched) {
  unread_.back().actions.push_back(ActionEvents{action, std::move(start), stamp(events_)});
  ActivityLog::instance().add({action_name(action), false, launched, Clock::now()});
}

void PipelineParallel::read_steps(bool wait) {
  while (!unread_.empty() && unread_.front().end && (wait || unread_.front().end->query())) {
    StepRecord& step = unread_.front();
    const auto since_start = [&](const Event& e) { return step.start->elapsed_ms(e) / 1000.0; };
    timeline_.clear();
    double compute = 0;
    for (ActionEvents& a : step.actions) {
      timeline_.push_back({a.action, since_start(*a.start), since_start(*a.end)});
      compute += timeline_.back().end_s - timeline_.back().start_s;
    }
    step_launched_ = step.launched;
    exchanges_.clear();
    for (ExchangeEvents& e : step.exchanges) {
      exchanges_.push_back({e.round, since_start(*e.posted), since_start(*e.done)});
    }
    step_seconds_ = since_start(*step.end);
    if (!step.first) {
      ++totals_.steps;
      totals_.step_seconds += step_seconds_;
      totals_.compute_seconds += compute;
    }
    give_back(step);
    unread_.pop_front();
  }
}

void PipelineParallel::give_back(StepRecord& step) {
  for (ActionEvents& a : step.actions) {
    events_.give(std::move(a.start));
    events_.give(std::move(a.end));
  }
  for (ExchangeEvents& e : step.exchanges) {
    events_.give(std::move(e.posted));
    events_.give(std::move(e.done));
  }
  events_.give(std::move(step.start));
  events_.give(std::move(step.end));
}

const std::vector<TimedAction>& PipelineParallel::timeline() {
  read_steps(true);
  return timeline_;
}

const std::vector<TimedExchange>& PipelineParallel::exchanges() {
  read_steps(true);
  return exchanges_;
}

std::chrono::steady_clock::time_point PipelineParallel::step_launched() {
  read_steps(true);
  return step_launched_;
}

double PipelineParallel::step_seconds() {
  read_steps(true);
  return step_seconds_;
}

PipelineTotals PipelineParallel::measured_totals() {
  read_steps(true);
  return totals_;
}

void PipelineParallel::add_shared_gradients() {
  if (!ends_group_) return;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const nn::StageBounds& bounds = bounds_[virtual_stage(static_cast<int>(c))];
    if (bounds.first || bounds.last) {
      ends_group_->allreduce(model_->shared_by_ends()->grad)->wait();
      return;
    }
  }
}

void PipelineParallel::gather_model() {
  const int p = pp_->size();
  const nn::Parameter* shared = model_->shared_by_ends();
  for (size_t at = 0; at < bounds_.size(); ++at) {
    const int owner = static_cast<int>(at) % p;
    const nn::ModuleState state = model_->stage(bounds_[at])->state();
    for (const auto& [name, parameter] : state.parameters) {
      // The last stage's copy of a shared parameter: the first stage's is the one broadcast.
      if (parameter == shared && !bounds_[at].first) continue;
      pp_->broadcast(parameter->value, owner)->wait();
    }
    for (const auto& [name, buffer] : state.buffers) pp_->broadcast(*buffer, owner)->wait();
  }
}

double PipelineParallel::measured_bubble() {
  read_steps(true);
  double compute = 0;
  for (const TimedAction& a : timeline_) compute += a.end_s - a.start_s;
  return step_seconds_ > 0 ? 1.0 - compute / step_seconds_ : 0.0;
}

}  // namespace course::parallel
