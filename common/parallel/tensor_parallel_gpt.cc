// Building the tensor-parallel GPT from the whole one's layers.
#include "common/parallel/tensor_parallel_gpt.h"

#include "common/kernels/elementwise.h"
#include "common/nn/residual_branch.h"
#include "common/nn/tied_head.h"
#include "common/parallel/parallel_linear.h"
#include "common/parallel/rank_groups.h"
#include "common/parallel/sequence_parallel.h"
#include "common/parallel/tensor_parallel_attention.h"

namespace course::parallel {

namespace {

// `to` receives `from`'s parameter values (two normalisations of one family and width).
void copy_parameters(nn::Module& to, nn::Module& from) {
  const std::vector<nn::Parameter*> mine = to.parameters(), theirs = from.parameters();
  for (size_t i = 0; i < mine.size(); ++i) copy_(mine[i]->value, theirs[i]->value);
}

nn::ModulePtr norm_copy(nn::DecoderFamily family, nn::Module& whole) {
  const Tensor& weight = whole.parameters().front()->value;
  nn::ModulePtr copy = nn::make_norm(family, weight.size(0), weight.device());
  copy_parameters(*copy, whole);
  return copy;
}

// One block cut from the whole one's layers: normalisation copies, head-parallel attention, the
// column-then-row feed-forward (a SwiGLU's gate and up cut alike); `cut` records its layers by
// role. The names are the whole block's.
nn::ModulePtr tensor_parallel_block(const nn::GptBlockLayers& whole, const nn::BlockShape& shape,
                                    const std::shared_ptr<Communicator>& tp, Activations between,
                                    TensorParallelGpt::CutBlock& cut) {
  const nn::BlockNames& names = nn::block_names(shape.family);
  auto attention_branch = std::make_unique<nn::Sequential>();
  cut.attention_norm = &attention_branch->add_named(norm_copy(shape.family, *whole.attention_norm),
                                                    names.attention_norm);
  cut.attention =
      &attention_branch->add_named(std::make_unique<TensorParallelAttention>(
                                       *whole.qkv, *whole.attention_projection, shape.heads, tp,
                                       between, AttentionNames{names.qkv, names.projection}),
                                   "attn");

  auto parallel_mlp = std::make_unique<nn::Sequential>();
  cut.expansion_parts = nn::expansion_parts(shape);
  cut.expansion = &parallel_mlp->add_named(
      std::make_unique<ColumnParallelLinear>(
          grouped_by_rank(*whole.expansion, cut.expansion_parts, tp->size()), tp,
          /*gather_output=*/false, between),
      names.expansion);
  parallel_mlp->add(nn::make_activation(shape.family), names.activation);
  cut.feed_forward_projection = &parallel_mlp->add_named(
      std::make_unique<RowParallelLinear>(*whole.feed_forward_projection, tp, between),
      names.feed_forward_projection);
  auto feed_forward_branch = std::make_unique<nn::Sequential>();
  cut.feed_forward_norm = &feed_forward_branch->add_named(
      norm_copy(shape.family, *whole.feed_forward_norm), names.feed_forward_norm);
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

// The output layer over the vocabulary: tied (above), or a column-parallel cut of its own
// weight gathering its logits.
nn::ModulePtr vocab_parallel_head(nn::Gpt& whole, nn::Parameter& table_rows,
                                  const std::shared_ptr<Communicator>& tp, Activations input) {
  if (nn::Linear* own = whole.own_head()) {
    return std::make_unique<ColumnParallelLinear>(*own, tp, /*gather_output=*/true, input);
  }
  return std::make_unique<TiedVocabParallelHead>(table_rows, tp, input);
}

}  // namespace

TensorParallelGpt::TensorParallelGpt(nn::Gpt& whole, std::shared_ptr<Communicator> tp,
                                     Activations between)
    : config_(whole.config()),
      tp_(tp),
      between_(between),
      embedding_(whole.embedding(), tp),
      input_(std::make_unique<EmbeddingPart>(embedding_, tp, between)),
      final_norm_(norm_copy(whole.config().family, whole.final_norm())),
      head_(vocab_parallel_head(whole, embedding_.wte, tp, between)) {
  COURSE_CHECK(!whole.checkpointed_blocks(),
               "a GPT whose blocks recompute their activations (checkpointed) cannot be cut over "
               "tensor-parallel ranks");
  for (const nn::GptBlockLayers& layers : whole.block_layers()) {
    blocks_.add(tensor_parallel_block(layers, nn::block_shape(config_), tp, between,
                                      cut_blocks_.emplace_back()));
  }
}

std::vector<nn::Module::Child> TensorParallelGpt::children() {
  return {{"", input_.get()},
          {"h", &blocks_},
          {"ln_f", final_norm_.get()},
          {nn::head_name(config_), head_.get()}};
}

void TensorParallelGpt::gather_into(nn::Gpt& whole) {
  embedding_.gather_into(whole.embedding());
  for (size_t b = 0; b < cut_blocks_.size(); ++b) {
    const CutBlock& mine = cut_blocks_[b];
    const nn::GptBlockLayers& target = whole.block_layers()[b];
    copy_parameters(*target.attention_norm, *mine.attention_norm);
    mine.attention->gather_into(*target.qkv, *target.attention_projection);
    copy_parameters(*target.feed_forward_norm, *mine.feed_forward_norm);
    mine.expansion->gather_into(*target.expansion);  // grouped by rank
    Tensor& expansion = target.expansion->weight.value;
    copy_(expansion, rows_ungrouped(expansion.clone(), mine.expansion_parts, tp_->size()));
    if (target.expansion->bias) {
      Tensor& bias = target.expansion->bias->value;
      copy_(bias, rows_ungrouped(bias.clone(), mine.expansion_parts, tp_->size()));
    }
    mine.feed_forward_projection->gather_into(*target.feed_forward_projection);
  }
  copy_parameters(whole.final_norm(), *final_norm_);
  if (nn::Linear* own = whole.own_head())
    static_cast<ColumnParallelLinear&>(*head_).gather_into(*own);
}

std::vector<nn::Parameter*> TensorParallelGpt::sequence_sharded_parameters() {
  if (between_ != Activations::kSequenceSharded) return {};
  std::vector<nn::Parameter*> out;
  const auto add_all = [&out](nn::Module& module) {
    for (nn::Parameter* p : module.parameters()) out.push_back(p);
  };
  const auto add_bias = [&out](RowParallelLinear& layer) {
    if (layer.bias) out.push_back(&*layer.bias);
  };
  for (const CutBlock& block : cut_blocks_) {
    add_all(*block.attention_norm);
    add_bias(block.attention->projection());
    add_all(*block.feed_forward_norm);
    add_bias(*block.feed_forward_projection);
  }
  add_all(*final_norm_);
  return out;
}

Tensor TensorParallelGpt::run_forward(const Tensor& tokens, nn::Context& ctx) {
  Tensor h = input_->forward(tokens, ctx.child(0));
  h = blocks_.forward(h, ctx.child(1));
  h = final_norm_->forward(h, ctx.child(2));
  return head_->forward(h, ctx.child(3));
}

Tensor TensorParallelGpt::run_backward(const Tensor& dlogits, nn::Context& ctx) {
  Tensor g = head_->backward(dlogits, ctx.child(3));
  g = final_norm_->backward(g, ctx.child(2));
  g = blocks_.backward(g, ctx.child(1));
  return input_->backward(g, ctx.child(0));
}

}  // namespace course::parallel
