// Building the tensor-parallel GPT from the whole one's layers.
#include "common/parallel/tensor_parallel/tensor_parallel_gpt.h"

#include "common/models/gpt/tied_head.h"
#include "common/parallel/context_parallel/ring_attention.h"
#include "common/parallel/tensor_parallel/parallel_linear.h"
#include "common/parallel/tensor_parallel/sequence_parallel.h"

namespace course::parallel {

namespace {

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
    cut_blocks_.push_back(&blocks_.add_named(
        std::make_unique<TensorParallelBlock>(layers, nn::block_shape(config_), tp, between), ""));
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
    cut_blocks_[b]->gather_into(whole.block_layers()[b]);
  }
  copy_parameters(whole.final_norm(), *final_norm_);
  if (nn::Linear* own = whole.own_head())
    static_cast<ColumnParallelLinear&>(*head_).gather_into(*own);
}

void TensorParallelGpt::use_context_parallel(std::shared_ptr<Communicator> cp) {
  embedding_.set_context_split({cp->rank(), cp->size()});
  const auto ring = std::make_shared<RingAttentionCore>(cp);
  for (TensorParallelBlock* block : cut_blocks_) block->attention().core().set_core(ring);
}

std::vector<nn::Parameter*> TensorParallelGpt::sequence_sharded_parameters() {
  if (between_ != Activations::kSequenceSharded) return {};
  std::vector<nn::Parameter*> out;
  for (TensorParallelBlock* block : cut_blocks_) {
    for (nn::Parameter* p : block->position_wise_parameters()) out.push_back(p);
  }
  for (nn::Parameter* p : final_norm_->parameters()) out.push_back(p);
  return out;
}

std::vector<nn::Parameter*> TensorParallelGpt::replicated_parameters() {
  std::vector<nn::Parameter*> out;
  for (TensorParallelBlock* block : cut_blocks_) {
    for (nn::Parameter* p : block->position_wise_parameters()) out.push_back(p);
  }
  for (nn::Parameter* p : final_norm_->parameters()) out.push_back(p);
  if (embedding_.wpe) out.push_back(&*embedding_.wpe);
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
