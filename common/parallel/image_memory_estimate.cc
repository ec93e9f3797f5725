// The image models' memory estimate: the pieces measured one by one.
#include "common/parallel/image_memory_estimate.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"
#include "common/tensor/allocator.h"

namespace course::parallel {

namespace {

constexpr int64_t kF32 = 4;

// The batch's activations up to this size are measured at the batch itself, so the allocator's
// rounding of each tensor is in the figures; larger ones at one image, then scaled (their
// tensors are large enough for the rounding not to matter).
constexpr int64_t kMeasuredWhole = int64_t{2} << 30;

// One piece at the measured batch: its parameters' element counts, the bytes its forward leaves
// allocated (saved tensors and output), and its input's and output's bytes.
struct PieceFigures {
  std::vector<int64_t> parameters;
  int64_t saved = 0, input = 0, output = 0;
};

struct MeasuredModel {
  std::vector<PieceFigures> pieces;  // stem, each block, head
  int64_t classes = 0;
};

MeasuredModel measure_pieces(const ImageMemoryPlan& plan, int64_t batch) {
  const nn::ModelPieces pieces = nn::model_pieces(plan.model);
  std::vector<const nn::ModelPiece*> order = {&pieces.stem};
  for (const nn::ModelPiece& block : pieces.blocks) order.push_back(&block);
  order.push_back(&pieces.head);
  CachingAllocator& allocator = device_allocator(Device::cpu());
  Shape input_shape = {batch};
  input_shape.insert(input_shape.end(), pieces.sample.begin(), pieces.sample.end());
  Tensor x = zeros(input_shape, DType::kF32, Device::cpu());
  std::map<std::string, PieceFigures> measured;  // by key: equal keys, equal figures
  MeasuredModel out;
  for (const nn::ModelPiece* piece : order) {
    auto known = measured.find(piece->key);
    if (known == measured.end()) {
      std::mt19937 rng(0);
      nn::ModulePtr module = piece->build(rng, Device::cpu());
      PieceFigures f;
      for (const nn::Parameter* p : module->parameters()) f.parameters.push_back(p->value.numel());
      f.input = static_cast<int64_t>(x.nbytes());
      const int64_t before = allocator.stats().allocated;
      nn::Autocast autocast(plan.compute == DType::kF32 ? DType::kBF16 : plan.compute,
                            plan.compute != DType::kF32);
      Tensor y = module->forward(x);
      f.saved = allocator.stats().allocated - before;
      f.output = static_cast<int64_t>(y.nbytes());
      x = y.clone();  // the next piece's input, the module and what it saved released
      known = measured.emplace(piece->key, f).first;
    }
    out.pieces.push_back(known->second);
  }
  out.classes = x.numel() / batch;
  return out;
}

}  // namespace

MemoryEstimate estimate_image_memory(const ImageMemoryPlan& plan) {
  COURSE_CHECK(plan.batch >= 1 && plan.state.ranks >= 1,
               "a memory estimate needs ranks and batch >= 1");
  const MeasuredModel one = measure_pieces(plan, 1);
  int64_t per_image = 0;
  for (const PieceFigures& f : one.pieces) per_image += f.saved;
  const bool whole = per_image * plan.batch <= kMeasuredWhole;
  const MeasuredModel m = whole ? measure_pieces(plan, plan.batch) : one;
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
    e.activation_layers.emplace_back("checkpointed block inputs", at_batch(block_inputs));
    e.activation_layers.emplace_back("recomputed block (the largest)", at_batch(largest_block));
  } else {
    e.activation_layers.emplace_back("blocks (" + std::to_string(weighted) + ")",
                                     at_batch(block_saves));
  }
  e.activation_layers.emplace_back("head and logits", at_batch(m.pieces.back().saved));
  for (const auto& [name, bytes] : e.activation_layers) e.activations += bytes;
  // Alive with everything above in backward: the loss's gradient, and the gradients into and
  // out of the largest block.
  e.temporaries = allocator_bytes(1, kF32 * plan.batch * m.classes) + 2 * at_batch(largest_output);
  return e;
}

}  // namespace course::parallel
