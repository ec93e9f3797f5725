// Building the tensor-parallel GPT from the whole one's layers.
#include "common/parallel/tensor_parallel_gpt.h"

#include <map>

#include "common/kernels/elementwise.h"
#include "common/nn/activation.h"
#include "common/nn/residual_branch.h"
#include "common/nn/tied_head.h"
#include "common/parallel/parallel_linear.h"
#include "common/parallel/sequence_parallel.h"
#include "common/parallel/tensor_parallel_attention.h"

namespace course::parallel {

namespace {

// The child of `m` named `name` ("" for a wrapper's only child), as a T.
template <class T>
T& child(nn::Module& m, const std::string& name) {
  for (const nn::Module::Child& c : m.children()) {
    if (c.name == name) {
      T* found = dynamic_cast<T*>(c.module);
      COURSE_CHECK(found != nullptr, "a GPT block's '", name, "' is not the layer expected");
      return *found;
    }
  }
  COURSE_FAIL("a GPT block has no '", name, "' (a checkpointed model cannot be cut)");
}

nn::ModulePtr layer_norm_copy(nn::LayerNorm& whole) {
  auto copy =
      std::make_unique<nn::LayerNorm>(whole.weight.value.size(0), whole.weight.value.device());
  copy_(copy->weight.value, whole.weight.value);
  copy_(copy->bias.value, whole.bias.value);
  return copy;
}

// One block: LayerNorm copies, head-parallel attention, the column-then-row feed-forward.
nn::ModulePtr tensor_parallel_block(nn::Module& whole_block, int64_t heads,
                                    const std::shared_ptr<Communicator>& tp, Activations between) {
  auto& attention = child<nn::Sequential>(child<nn::ResidualBranch>(whole_block, "attention"), "");
  auto& attn = child<nn::Sequential>(attention, "attn");
  auto attention_branch = std::make_unique<nn::Sequential>();
  attention_branch->add(layer_norm_copy(child<nn::LayerNorm>(attention, "ln_1")), "ln_1");
  attention_branch->add(
      std::make_unique<TensorParallelAttention>(
          child<nn::Linear>(attn, "c_attn"), child<nn::Linear>(attn, "c_proj"), heads, tp, between),
      "attn");

  auto& feed_forward =
      child<nn::Sequential>(child<nn::ResidualBranch>(whole_block, "feed_forward"), "");
  auto& mlp = child<nn::Sequential>(feed_forward, "mlp");
  auto parallel_mlp = std::make_unique<nn::Sequential>();
  parallel_mlp->add(std::make_unique<ColumnParallelLinear>(child<nn::Linear>(mlp, "c_fc"), tp,
                                                           /*gather_output=*/false, between),
                    "c_fc");
  parallel_mlp->add(std::make_unique<nn::GELU>(), "gelu");
  parallel_mlp->add(
      std::make_unique<RowParallelLinear>(child<nn::Linear>(mlp, "c_proj"), tp, between), "c_proj");
  auto feed_forward_branch = std::make_unique<nn::Sequential>();
  feed_forward_branch->add(layer_norm_copy(child<nn::LayerNorm>(feed_forward, "ln_2")), "ln_2");
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

}  // namespace

TensorParallelGpt::TensorParallelGpt(nn::Gpt& whole, std::shared_ptr<Communicator> tp,
                                     Activations between)
    : config_(whole.config()),
      tp_(tp),
      between_(between),
      embedding_(whole.embedding(), tp),
      input_(std::make_unique<EmbeddingPart>(embedding_, tp, between)),
      ln_f_(whole.config().channels, whole.final_norm().weight.value.device()),
      head_(std::make_unique<TiedVocabParallelHead>(embedding_.wte, tp, between)) {
  for (const Child& block : whole.blocks().children()) {
    blocks_.add(tensor_parallel_block(*block.module, whole.config().heads, tp, between),
                block.name);
  }
  copy_(ln_f_.weight.value, whole.final_norm().weight.value);
  copy_(ln_f_.bias.value, whole.final_norm().bias.value);
}

std::vector<nn::Module::Child> TensorParallelGpt::children() {
  return {{"", input_.get()}, {"h", &blocks_}, {"ln_f", &ln_f_}, {"", head_.get()}};
}

void TensorParallelGpt::gather_into(nn::Gpt& whole) {
  const int p = tp_->size();
  std::map<std::string, nn::Parameter*> whole_parameters;
  for (const auto& [name, parameter] : whole.state().parameters) {
    whole_parameters[name] = parameter;
  }
  for (const auto& [name, parameter] : state().parameters) {
    const auto found = whole_parameters.find(name);
    COURSE_CHECK(found != whole_parameters.end(), "the whole GPT has no parameter ", name);
    Tensor& target = found->second->value;
    const Tensor& mine = parameter->value;
    if (mine.shape() == target.shape()) {  // replicated
      copy_(target, mine);
    } else if (mine.size(0) != target.size(0)) {  // rows over the ranks
      Tensor rows = Tensor::empty(target.shape(), target.dtype(), target.device());
      tp_->all_gather(mine, rows)->wait();
      const bool qkv = name.find("c_attn") != std::string::npos;
      copy_(target, qkv ? ungrouped_qkv_rows(rows, p) : rows);
    } else {  // columns over the ranks
      copy_(target, all_gather_last_dim(mine, *tp_));
    }
  }
}

std::vector<nn::Parameter*> TensorParallelGpt::sequence_sharded_parameters() {
  std::vector<nn::Parameter*> out;
  if (between_ != Activations::kSequenceSharded) return out;
  const auto has = [](const std::string& name, const std::string& part) {
    return name.find(part) != std::string::npos;
  };
  for (const auto& [name, parameter] : state().parameters) {
    if (has(name, "ln_") || has(name, "c_proj.bias")) out.push_back(parameter);
  }
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
