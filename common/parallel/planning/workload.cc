// The GPT's workload in closed form; an image family's from its spec, or measured piece by piece.
#include "common/parallel/planning/workload.h"

#include "common/core/error.h"
#include "common/models/model_registry.h"
#include "common/parallel/planning/piece_measurement.h"

namespace course::parallel {

namespace {

Workload measured_workload(const nn::ModelConfig& model) {
  const MeasuredModel m = measure_pieces(model, 1, DType::kBF16);
  Workload w{
      .name = model.name,
      .sample = "images of " + std::to_string(nn::model_pieces(model).sample.back()) + " px"};
  for (const PieceFigures& piece : m.pieces) {
    for (int64_t elements : piece.parameters) w.parameters += static_cast<double>(elements);
    w.multiply_adds += piece.multiply_adds;
  }
  for (size_t b = 1; b + 1 < m.pieces.size(); ++b) {
    w.blocks.push_back({.output_elements = static_cast<double>(m.pieces[b].output_elements),
                        .saved_whole_bytes = static_cast<double>(m.pieces[b].saved),
                        .multiply_adds = m.pieces[b].multiply_adds});
  }
  w.ends.saved_whole_bytes = static_cast<double>(m.pieces.front().saved + m.pieces.back().saved);
  w.ends.multiply_adds = m.pieces.front().multiply_adds + m.pieces.back().multiply_adds;
  return w;
}

}  // namespace

Workload gpt_workload(const nn::GptConfig& c) {
  const double s = static_cast<double>(c.context), h = static_cast<double>(c.channels);
  const double v = static_cast<double>(c.vocabulary);
  const nn::BlockWork block = nn::transformer_block_work(
      {s, h, static_cast<double>(c.heads), static_cast<double>(c.key_value_heads()),
       static_cast<double>(c.feed_forward_expansion()),
       static_cast<double>(c.feed_forward_width())});
  // The ends: the embedding's dropout mask, a byte a value; the logits in f32, cut over tp.
  nn::BlockWork ends{.saved_whole_bytes = s * h,
                     .saved_cut_bytes = 4 * s * v,
                     .products = {{s, v, h, 1, nn::MatrixProduct::Cut::kColumns}}};
  ends.multiply_adds = nn::multiply_adds(ends.products);
  Workload w{
      .name = c.name,
      .sample = "sequences of " + std::to_string(c.context) + " tokens",
      .parameters = static_cast<double>(nn::gpt_parameter_count(c)),
      .multiply_adds = static_cast<double>(c.layers) * block.multiply_adds + ends.multiply_adds,
      .blocks = std::vector<BlockWork>(c.layers, block),
      .ends = ends,
      .heads = c.heads,
      .key_value_heads = c.key_value_heads(),
      .sequence = c.context};
  return w;
}

Workload image_workload(const nn::ModelConfig& model) {
  const nn::ModelFamilySpec& family = nn::model_family(model.name);
  const nn::ModelFamilyTraits& traits = family.traits;
  if (family.workload) return family.workload(model);
  COURSE_CHECK(traits.in_pieces, "the throughput model costs the image models in pieces, not ",
               traits.name, "'s ", model.name,
               (traits.images ? "" : " (gpt_workload costs a language model)"));
  return measured_workload(model);
}

}  // namespace course::parallel
