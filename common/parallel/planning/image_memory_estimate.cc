// The image models' memory estimate: the pieces measured one by one.
#include "common/parallel/planning/image_memory_estimate.h"

#include <algorithm>

#include "common/parallel/data_parallel/sharding.h"
#include "common/parallel/planning/piece_measurement.h"

namespace course::parallel {

namespace {

constexpr int64_t kF32 = 4;

// The batch's activations up to this size are measured at the batch itself, so the allocator's
// rounding of each tensor is in the figures; larger ones at one image, then scaled (their
// tensors are large enough for the rounding not to matter).
constexpr int64_t kMeasuredWhole = int64_t{2} << 30;

// The casts of their weights that the pieces' layers keep for backward (measured at one image:
// they do not grow with the batch): the stem's and head's, and the blocks' unless sharding frees
// their parameters between the passes; checkpointed, only the block being backed up keeps them.
// None where the parameters are gathered in the compute dtype already.
int64_t kept_weight_casts(const ImageMemoryPlan& plan, const MeasuredModel& one) {
  if (plan.state.param_dtype != DType::kF32) return 0;
  const size_t blocks = one.pieces.size() - 2;
  int64_t casts = one.pieces.front().weight_casts + one.pieces.back().weight_casts;
  if (plan.state.sharding && policy_of(*plan.state.sharding).reshard_after_forward) return casts;
  int64_t largest = 0, all = 0;
  for (size_t b = 1; b <= blocks; ++b) {
    largest = std::max(largest, one.pieces[b].weight_casts);
    all += one.pieces[b].weight_casts;
  }
  return casts + (plan.checkpoint_activations ? largest : all);
}

}  // namespace

MemoryEstimate estimate_image_memory(const ImageMemoryPlan& plan) {
  COURSE_CHECK(plan.batch >= 1 && plan.state.ranks >= 1,
               "a memory estimate needs ranks and batch >= 1");
  const MeasuredModel one = measure_pieces(plan.model, 1, plan.compute);
  int64_t per_image = 0;
  for (const PieceFigures& f : one.pieces) per_image += f.saved;
  const bool whole = per_image * plan.batch <= kMeasuredWhole;
  const MeasuredModel m = whole ? measure_pieces(plan.model, plan.batch, plan.compute) : one;
  const int64_t scale = whole ? 1 : plan.batch;
  const size_t blocks = m.pieces.size() - 2;
  ParameterLayout layout{
      .before = m.pieces.front().parameters, .after = m.pieces.back().parameters, .units = {}};
  for (size_t b = 1; b <= blocks; ++b) layout.units.push_back(m.pieces[b].parameters);
  MemoryEstimate e;
  add_model_state(plan.state, layout, e);

  // Activations: everything each piece saves, for the batch; checkpointed, each block keeps
  // its input and the one being backed up recomputes what it saves.
  int64_t largest_block = 0, largest_output = 0, block_inputs = 0, block_saves = 0, weighted = 0;
  for (size_t b = 1; b <= blocks; ++b) {
    if (!m.pieces[b].parameters.empty()) ++weighted;  // not the token conversion
    largest_block = std::max(largest_block, m.pieces[b].saved);
    largest_output = std::max(largest_output, m.pieces[b].output);
    block_inputs += m.pieces[b].input;
    block_saves += m.pieces[b].saved;
  }
  const auto at_batch = [scale](int64_t bytes) { return allocator_bytes(1, bytes * scale); };
  e.activation_layers = {{"stem", at_batch(m.pieces.front().saved)}};
  if (plan.checkpoint_activations) {
    e.activation_layers.push_back({"checkpointed block inputs", at_batch(block_inputs)});
    e.activation_layers.push_back({"recomputed block (the largest)", at_batch(largest_block)});
  } else {  // blocks of different sizes: their sum, once
    e.activation_layers.push_back(
        {"blocks (" + std::to_string(weighted) + ")", at_batch(block_saves)});
  }
  e.activation_layers.push_back({"head and logits", at_batch(m.pieces.back().saved)});
  const int64_t casts = kept_weight_casts(plan, one);
  if (casts > 0) e.activation_layers.push_back({"weight casts kept for backward", casts});
  for (const ActivationPart& part : e.activation_layers) e.activations += part.total();
  // Alive with everything above in backward: the loss's gradient, and the gradients into and
  // out of the largest block.
  e.temporaries = allocator_bytes(1, kF32 * plan.batch * m.classes) + 2 * at_batch(largest_output);
  return e;
}

}  // namespace course::parallel
