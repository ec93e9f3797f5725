// The vocabulary-parallel embedding through the embedding kernels and an all-reduce.
#include "common/parallel/tensor_parallel/vocab_parallel_embedding.h"

#include "common/kernels/elementwise.h"
#include "common/kernels/embedding.h"

namespace course::parallel {

namespace {

Tensor table_rows_of(const Tensor& table, int rank, int size) {
  COURSE_CHECK(table.size(0) % size == 0, "a vocabulary of ", table.size(0),
               " tokens does not split over ", size, " tensor-parallel ranks");
  const int64_t n = table.size(0) / size;
  return table.slice(rank * n, (rank + 1) * n).clone();
}

// A copy of the whole model's position table, if it has one.
std::optional<nn::Parameter> position_table(const nn::Embedding& whole) {
  if (!whole.wpe) return std::nullopt;
  return nn::Parameter(whole.wpe->value.clone());
}

}  // namespace

VocabParallelEmbedding::VocabParallelEmbedding(const nn::Embedding& whole,
                                               std::shared_ptr<Communicator> tp)
    : wte(table_rows_of(whole.wte.value, tp->rank(), tp->size())),
      wpe(position_table(whole)),
      tp_(std::move(tp)),
      first_token_(tp_->rank() * wte.value.size(0)) {}

void VocabParallelEmbedding::gather_into(nn::Embedding& whole) {
  tp_->all_gather(wte.value, whole.wte.value)->wait();
  if (wpe) copy_(whole.wpe->value, wpe->value);
}

void VocabParallelEmbedding::collect(const std::string& prefix, nn::ModuleState& state) {
  state.parameters.emplace_back(prefix + "wte.weight", &wte);
  if (wpe) state.parameters.emplace_back(prefix + "wpe.weight", &*wpe);
}

Tensor VocabParallelEmbedding::local_rows(const Tensor& tokens) const {
  return token_rows_in_slice(tokens, first_token_, wte.value.size(0));
}

Tensor VocabParallelEmbedding::extended_table() const {
  const int64_t rows = wte.value.size(0);
  Tensor table = zeros({rows + 1, wte.value.size(1)}, DType::kF32, wte.value.device());
  Tensor mine = table.slice(0, rows);
  copy_(mine, wte.value);
  return table;
}

Tensor VocabParallelEmbedding::position_rows(const Tensor& tokens) const {
  if (!wpe) return Tensor();
  // Rank 0 adds the positions; the others look up zeros for them, so the sum holds them once.
  if (tp_->rank() != 0) {
    const int64_t rows = context_.active() ? tokens.size(1) : wpe->value.size(0);
    return zeros({rows, wpe->value.size(1)}, DType::kF32, wpe->value.device());
  }
  return context_.active() ? context_.table_rows(wpe->value, context_.sequence_of(tokens.size(1)))
                           : wpe->value;
}

Tensor VocabParallelEmbedding::run_forward(const Tensor& tokens, nn::Context& ctx) {
  const Tensor local = local_rows(tokens);
  Tensor y = embedding_forward(local, extended_table(), position_rows(tokens));
  if (tp_->size() > 1) tp_->allreduce(y)->wait();
  ctx.save(local);
  return y;
}

Tensor VocabParallelEmbedding::run_backward(const Tensor& dy, nn::Context& ctx) {
  const Tensor& local = ctx.saved<Tensor>("VocabParallelEmbedding");
  const int64_t rows = wte.value.size(0);
  Tensor table_grad = zeros({rows + 1, wte.value.size(1)}, DType::kF32, wte.value.device());
  Tensor positions_grad;
  if (wpe) {
    // Under context parallelism the rows of this rank's positions, added back into the table.
    positions_grad = context_.active() ? zeros({local.size(1), wpe->value.size(1)}, DType::kF32,
                                               wpe->value.device())
                                       : wpe->grad;
  }
  embedding_backward(dy, local, table_grad, positions_grad);
  if (wpe) {
    if (context_.active()) {
      context_.add_table_rows(positions_grad, context_.sequence_of(local.size(1)), wpe->grad);
    }
    grad_ready(*wpe);
  }
  axpy_(1.0f, table_grad.slice(0, rows), wte.grad);  // the zero row's gradient is dropped
  grad_ready(wte);
  return Tensor();
}

}  // namespace course::parallel
