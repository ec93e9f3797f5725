// The ViT's blocks cut over the tensor-parallel ranks, its stem and head shared with the whole.
#include "common/parallel/tensor_parallel/tensor_parallel_vit.h"

namespace course::parallel {

TensorParallelVit::TensorParallelVit(nn::Module& whole, std::shared_ptr<Communicator> tp)
    : stem_(whole.child("stem")), head_(whole.child("head")) {
  for (const Child& block : whole.child("blocks").children()) {
    const auto* layers = dynamic_cast<const nn::TransformerBlock*>(block.module);
    COURSE_CHECK(layers != nullptr,
                 "tensor parallelism cuts transformer blocks (a GPT's, a Llama's, a ViT's); block ",
                 block.name,
                 " of this model is not one: it takes pipeline stages and data parallelism only");
    whole_blocks_.push_back(layers->layers());
    cut_blocks_.push_back(
        &blocks_.add_named(std::make_unique<TensorParallelBlock>(layers->layers(), layers->shape(),
                                                                 tp, Activations::kReplicated),
                           block.name));
  }
}

std::vector<nn::Module::Child> TensorParallelVit::children() {
  return {{"stem", &stem_}, {"blocks", &blocks_}, {"head", &head_}};
}

void TensorParallelVit::gather_into_whole() {
  for (size_t b = 0; b < cut_blocks_.size(); ++b) cut_blocks_[b]->gather_into(whole_blocks_[b]);
}

std::vector<nn::Parameter*> TensorParallelVit::replicated_parameters() {
  std::vector<nn::Parameter*> out = stem_.parameters();
  for (TensorParallelBlock* block : cut_blocks_) {
    for (nn::Parameter* p : block->position_wise_parameters()) out.push_back(p);
  }
  for (nn::Parameter* p : head_.parameters()) out.push_back(p);
  return out;
}

Tensor TensorParallelVit::run_forward(const Tensor& images, nn::Context& ctx) {
  const Tensor tokens = blocks_.forward(stem_.forward(images, ctx.child(0)), ctx.child(1));
  return head_.forward(tokens, ctx.child(2));
}

Tensor TensorParallelVit::run_backward(const Tensor& dlogits, nn::Context& ctx) {
  const Tensor dtokens = blocks_.backward(head_.backward(dlogits, ctx.child(2)), ctx.child(1));
  return stem_.backward(dtokens, ctx.child(0));
}

}  // namespace course::parallel
