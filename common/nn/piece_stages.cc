// An assembled model's stages, and the sample forward that sizes what crosses between them.
#include "common/nn/piece_stages.h"

#include "common/nn/module_chain.h"
#include "common/nn/relative_attention.h"
#include "common/nn/self_attention.h"

namespace course::nn {

namespace {

Module::Child child_named(Module& model, const std::string& name) {
  return {name, &model.child(name)};
}

double parameter_count(Module& part) { return static_cast<double>(part.parameter_count()); }

// The attention layers among `part` and its descendants.
int64_t attention_layers(Module& part) {
  int64_t count = dynamic_cast<SelfAttention*>(&part) != nullptr ||
                  dynamic_cast<RelativePositionAttention*>(&part) != nullptr;
  for (const Module::Child& child : part.children()) count += attention_layers(*child.module);
  return count;
}

}  // namespace

double part_multiply_adds(Module& part, const Tensor& y) {
  const double weights = parameter_count(part);
  if (y.dim() == 4) return weights * static_cast<double>(y.size(2) * y.size(3));
  if (y.dim() == 3) {
    const double t = static_cast<double>(y.size(1)), width = static_cast<double>(y.size(2));
    return weights * t + static_cast<double>(attention_layers(part)) * 2 * t * t * width;
  }
  return weights;
}

PieceStages::PieceStages(Module& model, const Tensor& sample)
    : stem_(child_named(model, "stem")), head_(child_named(model, "head")) {
  COURSE_CHECK(sample.dim() == 4 && sample.size(0) == 1,
               "a staged image model is sized by one sample (1, C, H, W), got ", sample.str());
  for (const Module::Child& block : child_named(model, "blocks").module->children()) {
    blocks_.push_back({"blocks." + block.name, block.module});
  }
  const bool training = model.training();
  model.set_training(false);
  Context scratch;
  Tensor h = stem_.module->forward(sample, scratch);
  multiply_adds_.first = part_multiply_adds(*stem_.module, h);
  for (const Module::Child& block : blocks_) {
    entering_.push_back({Shape(h.shape().begin() + 1, h.shape().end()), h.memory_format()});
    scratch.clear();
    h = block.module->forward(h, scratch);
    multiply_adds_.blocks.push_back(part_multiply_adds(*block.module, h));
  }
  entering_.push_back({Shape(h.shape().begin() + 1, h.shape().end()), h.memory_format()});
  scratch.clear();
  multiply_adds_.last = part_multiply_adds(*head_.module, head_.module->forward(h, scratch));
  model.set_training(training);
}

std::unique_ptr<Module> PieceStages::stage(const StageBounds& bounds) {
  COURSE_CHECK(bounds.first_block >= 0 && bounds.first_block <= bounds.end_block &&
                   bounds.end_block <= blocks(),
               "a stage of blocks [", bounds.first_block, ", ", bounds.end_block, ") of a ",
               blocks(), "-block model");
  std::vector<Module::Child> layers;
  if (bounds.first) layers.push_back(stem_);
  layers.insert(layers.end(), blocks_.begin() + bounds.first_block,
                blocks_.begin() + bounds.end_block);
  if (bounds.last) layers.push_back(head_);
  return std::make_unique<ModuleChain>(std::move(layers));
}

PartCosts PieceStages::parameters(int) {
  PartCosts out{.first = parameter_count(*stem_.module), .last = parameter_count(*head_.module)};
  for (const Module::Child& block : blocks_) out.blocks.push_back(parameter_count(*block.module));
  return out;
}

Tensor PieceStages::empty_activation(int64_t block, const Tensor& input) {
  COURSE_CHECK(block >= 0 && block <= blocks(), "no activation enters block ", block, " of ",
               blocks());
  const Activation& a = entering_[block];
  Shape shape = {input.size(0)};
  shape.insert(shape.end(), a.shape.begin(), a.shape.end());
  return Tensor::empty(shape, DType::kF32, input.device(), a.format);
}

}  // namespace course::nn
