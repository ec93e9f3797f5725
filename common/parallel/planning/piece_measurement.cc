// Measuring an image model's pieces one at a time.
#include "common/parallel/planning/piece_measurement.h"

#include <map>
#include <string>

#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"
#include "common/nn/init.h"
#include "common/nn/piece_stages.h"
#include "common/tensor/allocator.h"

namespace course::parallel {

MeasuredModel measure_pieces(const nn::ModelConfig& model, int64_t batch, DType compute) {
  const nn::ModelPieces pieces = nn::model_pieces(model);
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
      nn::ModulePtr module = [&] {
        const nn::SkippedInit shapes_only;  // the values do not change what is allocated
        return piece->build(rng, Device::cpu());
      }();
      PieceFigures f;
      for (const nn::Parameter* p : module->parameters()) f.parameters.push_back(p->value.numel());
      f.input = static_cast<int64_t>(x.nbytes());
      nn::Autocast autocast(compute == DType::kF32 ? DType::kBF16 : compute,
                            compute != DType::kF32);
      // What a forward holds when it returns (what it saved, and its output), its layers
      // keeping the casts of their weights for backward or not.
      const auto held_after_forward = [&](bool keep_casts) {
        for (nn::Parameter* p : module->parameters()) p->released_between_passes = !keep_casts;
        nn::Context ctx;
        const int64_t before = allocator.stats().allocated;
        Tensor out = module->forward(x, ctx);
        return std::pair{allocator.stats().allocated - before, out};
      };
      const auto [saved, y] = held_after_forward(false);
      f.saved = saved;
      if (compute != DType::kF32) f.weight_casts = held_after_forward(true).first - f.saved;
      f.output = static_cast<int64_t>(y.nbytes());
      f.output_elements = y.numel() / batch;
      f.multiply_adds = nn::part_multiply_adds(*module, y);
      x = y.clone();  // the next piece's input, the module and what it saved released
      known = measured.emplace(piece->key, f).first;
    }
    out.pieces.push_back(known->second);
  }
  out.classes = x.numel() / batch;
  return out;
}

}  // namespace course::parallel
