// The optimizer in backward: groups updated as their gradients become final, then freed; f16's
// step in two passes.
#include "common/parallel/optimizer_in_backward.h"

#include <algorithm>

#include "common/kernels/elementwise.h"

namespace course::parallel {

OptimizerInBackward::OptimizerInBackward(optim::Optimizer& optimizer,
                                         TrainingParallelism& parallelism)
    : optimizer_(optimizer), parallelism_(parallelism) {
  optimizer_.set_update_groups(parallelism.gradient_groups());
  final_.assign(optimizer_.update_groups().size(), 0);
  for (const auto& [name, p] : optimizer_.parameters()) {
    p->grad_on_demand = true;
    p->grad = Tensor();  // made again by the first backward that adds to it
  }
  parallelism.when_gradients_final([this](size_t group) { gradients_final(group); });
}

OptimizerInBackward::~OptimizerInBackward() {
  for (const auto& [name, p] : optimizer_.parameters()) {
    p->grad_on_demand = false;
    if (!p->grad.defined()) p->grad = zeros(p->value.shape(), DType::kF32, p->value.device());
  }
}

void OptimizerInBackward::gradients_final(size_t group) {
  const std::vector<size_t>& members = optimizer_.update_groups().at(group);
  if (visit_) {  // f16's passes only: the usual step makes no list
    std::vector<nn::Parameter*> params;
    for (size_t i : members) params.push_back(optimizer_.parameters()[i].second);
    visit_(params);
  }
  if (!checking_) optimizer_.update_group(group, skip_if_);
  ++final_.at(group);
  for (size_t i : members) optimizer_.parameters()[i].second->grad = Tensor();
}

void OptimizerInBackward::begin_pass(bool checking, GroupGradients visit, Tensor skip_if) {
  std::fill(final_.begin(), final_.end(), 0);
  checking_ = checking;
  visit_ = std::move(visit);
  skip_if_ = std::move(skip_if);
}

void OptimizerInBackward::end_pass(const char* what) {
  for (size_t g = 0; g < final_.size(); ++g) {
    COURSE_CHECK(final_[g] == 1, "the optimizer in backward ", what, " group ", g, " (",
                 optimizer_.parameters()[optimizer_.update_groups()[g].front()].first, ", ...) ",
                 final_[g],
                 " time(s) in this step, not once: was a parameter left out of the "
                 "backward pass?");
  }
  visit_ = {};
  skip_if_ = Tensor();
}

void OptimizerInBackward::begin_step() {
  begin_pass(false, {}, Tensor());
  optimizer_.prepare_step();
}

void OptimizerInBackward::end_step() {
  end_pass("updated");
  optimizer_.count_step();
}

Tensor OptimizerInBackward::check_pass(const std::function<Tensor()>& passes,
                                       optim::LossScaler& scaler, const GroupGradients& inspect) {
  scaler.clear_found_inf(optimizer_.parameters().front().second->value.device());
  begin_pass(
      true,
      [&](const std::vector<nn::Parameter*>& params) {
        if (inspect) inspect(params);
        scaler.unscale_and_mark(params);
      },
      Tensor());
  Tensor loss = passes();
  end_pass("checked");
  return loss;
}

Tensor OptimizerInBackward::loss_scaled_step(const std::function<Tensor()>& passes,
                                             optim::LossScaler& scaler, Communicator* ranks,
                                             const GroupGradients& inspect) {
  const nn::BufferSnapshot before_check(parallelism_.whole_model());
  Tensor loss = check_pass(passes, scaler, inspect);
  if (ranks) ranks->allreduce(scaler.found_inf_slot(), ReduceOp::kMax)->wait();
  const GroupGradients unscale = [&scaler](const std::vector<nn::Parameter*>& params) {
    scaler.unscale(params);
  };
  optimizer_.prepare_step();
  const bool on_device = optimizer_.skips_on_device();
  // LARS and LAMB cannot skip on the device: the host reads the flag, as their step() does.
  if (on_device || scaler.found_inf().to_vector<float>()[0] == 0) {
    before_check.restore();  // the running statistics move once, in the second pass
    begin_pass(false, unscale, on_device ? scaler.found_inf() : Tensor());
    passes();
    end_step();
  } else if (optimizer_.counts_skipped_steps()) {
    optimizer_.count_step();
  }
  scaler.update();
  return loss;
}

}  // namespace course::parallel
