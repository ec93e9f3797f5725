// Building the tensor-parallel GPT from the whole one's layers.
#include "common/parallel/tensor_parallel_gpt.h"

#include "common/kernels/elementwise.h"
#include "common/nn/activation.h"
#include "common/nn/residual_branch.h"
#include "common/nn/tied_head.h"
#include "common/parallel/parallel_linear.h"
#include "common/parallel/sequence_parallel.h"
#include "common/parallel/tensor_parallel_attention.h"

namespace course::parallel {

namespace {

void copy_layer_norm(nn::LayerNorm& to, const nn::LayerNorm& from) {
  copy_(to.weight.value, from.weight.value);
  copy_(to.bias.value, from.bias.value);
}

std::unique_ptr<nn::LayerNorm> layer_norm_copy(const nn::LayerNorm& whole) {
  auto copy =
      std::make_unique<nn::LayerNorm>(whole.weight.value.size(0), whole.weight.value.device());
  copy_layer_norm(*copy, whole);
  return copy;
}

// One block cut from the whole one's layers: LayerNorm copies, head-parallel attention, the
// column-then-row feed-forward; `cut` records its layers by role.
nn::ModulePtr tensor_parallel_block(const nn::GptBlockLayers& whole, int64_t heads,
                                    const std::shared_ptr<Communicator>& tp, Activations between,
                                    TensorParallelGpt::CutBlock& cut) {
  auto attention_branch = std::make_unique<nn::Sequential>();
  auto attention_norm = layer_norm_copy(*whole.attention_norm);
  cut.attention_norm = attention_norm.get();
  attention_branch->add(std::move(attention_norm), "ln_1");
  auto attention = std::make_unique<TensorParallelAttention>(
      *whole.qkv, *whole.attention_projection, heads, tp, between);
  cut.attention = attention.get();
  attention_branch->add(std::move(attention), "attn");

  auto parallel_mlp = std::make_unique<nn::Sequential>();
  auto expansion = std::make_unique<ColumnParallelLinear>(*whole.expansion, tp,
                                                          /*gather_output=*/false, between);
  cut.expansion = expansion.get();
  parallel_mlp->add(std::move(expansion), "c_fc");
  parallel_mlp->add(std::make_unique<nn::GELU>(), "gelu");
  auto projection =
      std::make_unique<RowParallelLinear>(*whole.feed_forward_projection, tp, between);
  cut.feed_forward_projection = projection.get();
  parallel_mlp->add(std::move(projection), "c_proj");
  auto feed_forward_branch = std::make_unique<nn::Sequential>();
  auto feed_forward_norm = layer_norm_copy(*whole.feed_forward_norm);
  cut.feed_forward_norm = feed_forward_norm.get();
  feed_forward_branch->add(std::move(feed_forward_norm), "ln_2");
  feed_forward_branch->add(std::move(parallel_mlp), "mlp");

  auto block = std::make_unique<nn::Sequential>();
  block->add(std::make_unique<nn::ResidualBranch>(std::move(attention_branch)), "attention");
  block->add(std::make_unique<nn::ResidualBranch>(std::move(feed_forward_branch)), "feed_forward");
  return block;
}

// The output layer on the rank's rows of the tied table: f (or the all-gather along the
// sequence), the rank's logits, all-gathered.
class TiedVocabParallelHead : public nn::Module {
 public:
  TiedVocabParallelHead(nn::Parameter& rows, std::shared_ptr<Communicator> tp, Activations input)
      : enter_(enter_tensor_parallel(input, tp)), head_(rows), gather_(tp) {}

 protected:
  Tensor run_forward(const Tensor& h, nn::Context& ctx) override {
    const Tensor mine = head_.forward(enter_->forward(h, ctx.child(0)), ctx.child(1));
    return gather_.forward(mine, ctx.child(2));
  }
  Tensor run_backward(const Tensor& dlogits, nn::Context& ctx) override {
    const Tensor mine = gather_.backward(dlogits, ctx.child(2));
    return enter_->backward(head_.backward(mine, ctx.child(1)), ctx.child(0));
  }

 private:
  nn::ModulePtr enter_;
  nn::TiedHead head_;
  GatherFromTensorParallel gather_;
};

// The embedding, then with sequence parallelism this rank's positions of it.
class EmbeddingPart : public nn::Module {
 public:
  EmbeddingPart(VocabParallelEmbedding& embedding, std::shared_ptr<Communicator> tp,
                Activations output)
      : embedding_(embedding),
        scatter_(output == Activations::kSequenceSharded
                     ? std::make_unique<ScatterToSequenceParallel>(tp)
                     : nullptr) {}

  std::vector<Child> children() override { return {{"", &embedding_}}; }

 protected:
  Tensor run_forward(const Tensor& tokens, nn::Context& ctx) override {
    const Tensor h = embedding_.forward(tokens, ctx.child(0));
    return scatter_ ? scatter_->forward(h, ctx.child(1)) : h;
  }
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override {
    return embedding_.backward(scatter_ ? scatter_->backward(dy, ctx.child(1)) : dy, ctx.child(0));
  }

 private:
  VocabParallelEmbedding& embedding_;
  nn::ModulePtr scatter_;
};

// The whole model's configuration, if this cut can take it.
const nn::GptConfig& cuttable(const nn::Gpt& whole) {
  COURSE_CHECK(!whole.config().llama(), "tensor parallelism cuts GPT-2 models: ",
               whole.config().name, " is a Llama, whose grouped heads and SwiGLU are not cut");
  return whole.config();
}

}  // namespace

TensorParallelGpt::TensorParallelGpt(nn::Gpt& whole, std::shared_ptr<Communicator> tp,
                                     Activations between)
    : config_(cuttable(whole)),
      tp_(tp),
      between_(between),
      embedding_(whole.embedding(), tp),
      input_(std::make_unique<EmbeddingPart>(embedding_, tp, between)),
      ln_f_(whole.config().channels, whole.final_layer_norm().weight.value.device()),
      head_(std::make_unique<TiedVocabParallelHead>(embedding_.wte, tp, between)) {
  COURSE_CHECK(!whole.checkpointed_blocks(),
               "a GPT whose blocks recompute their activations (checkpointed) cannot be cut over "
               "tensor-parallel ranks");
  for (const nn::GptBlockLayers& layers : whole.block_layers()) {
    blocks_.add(tensor_parallel_block(layers, whole.config().heads, tp, between,
                                      cut_blocks_.emplace_back()));
  }
  copy_layer_norm(ln_f_, whole.final_layer_norm());
}

std::vector<nn::Module::Child> TensorParallelGpt::children() {
  return {{"", input_.get()}, {"h", &blocks_}, {"ln_f", &ln_f_}, {"", head_.get()}};
}

void TensorParallelGpt::gather_into(nn::Gpt& whole) {
  embedding_.gather_into(whole.embedding());
  for (size_t b = 0; b < cut_blocks_.size(); ++b) {
    const CutBlock& mine = cut_blocks_[b];
    const nn::GptBlockLayers& target = whole.block_layers()[b];
    copy_layer_norm(*target.attention_norm, *mine.attention_norm);
    mine.attention->gather_into(*target.qkv, *target.attention_projection);
    copy_layer_norm(*target.feed_forward_norm, *mine.feed_forward_norm);
    mine.expansion->gather_into(*target.expansion);
    mine.feed_forward_projection->gather_into(*target.feed_forward_projection);
  }
  copy_layer_norm(whole.final_layer_norm(), ln_f_);
}

std::vector<nn::Parameter*> TensorParallelGpt::sequence_sharded_parameters() {
  if (between_ != Activations::kSequenceSharded) return {};
  std::vector<nn::Parameter*> out;
  for (const CutBlock& block : cut_blocks_) {
    out.insert(out.end(), {&block.attention_norm->weight, &block.attention_norm->bias,
                           &block.attention->projection().bias, &block.feed_forward_norm->weight,
                           &block.feed_forward_norm->bias, &block.feed_forward_projection->bias});
  }
  out.insert(out.end(), {&ln_f_.weight, &ln_f_.bias});
  return out;
}

Tensor TensorParallelGpt::run_forward(const Tensor& tokens, nn::Context& ctx) {
  Tensor h = input_->forward(tokens, ctx.child(0));
  h = blocks_.forward(h, ctx.child(1));
  h = ln_f_.forward(h, ctx.child(2));
  return head_->forward(h, ctx.child(3));
}

Tensor TensorParallelGpt::run_backward(const Tensor& dlogits, nn::Context& ctx) {
  Tensor g = head_->backward(dlogits, ctx.child(3));
  g = ln_f_.backward(g, ctx.child(2));
  g = blocks_.backward(g, ctx.child(1));
  return input_->backward(g, ctx.child(0));
}

}  // namespace course::parallel
