// The token embedding cut over the vocabulary (Megatron-LM's VocabParallelEmbedding), from a
// whole nn::Embedding every rank built from the same seed: rank r keeps table rows
// [r V/p, (r+1) V/p) and the whole position table. A token outside the rank's rows looks up
// zeros; the ranks' lookups are summed (g), so every rank ends with the whole embedding. The
// position rows are added once (on rank 0, before the sum); their gradient, computed from the
// replicated output gradient, is the same on every rank. Under context parallelism the tokens
// are this rank's rows of longer sequences, which take the position rows of their positions.
#pragma once

#include <memory>
#include <optional>

#include "common/nn/context_split.h"
#include "common/nn/embedding.h"
#include "common/parallel/comm/communicator.h"

namespace course::parallel {

class VocabParallelEmbedding : public nn::Module {
 public:
  // Throws when the vocabulary does not split over the ranks.
  VocabParallelEmbedding(const nn::Embedding& whole, std::shared_ptr<Communicator> tp);

  void collect(const std::string& prefix, nn::ModuleState& state) override;
  int64_t first_token() const { return first_token_; }
  // Collective over the tensor-parallel ranks: `whole` receives every rank's rows.
  void gather_into(nn::Embedding& whole);
  // The tokens from now on are this rank's rows of sequences cut so (context parallelism).
  void set_context_split(const nn::ContextSplit& split) { context_ = split; }

  nn::Parameter wte;                 // (V / p, C): this rank's rows
  std::optional<nn::Parameter> wpe;  // (context, C): whole; none with rotary positions

 protected:
  // tokens (B, T) i32 -> (B, T, C) f32, the same on every rank.
  Tensor run_forward(const Tensor& tokens, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  // The tokens as rows of this rank's table, extended by one zero row that every token outside
  // the rank's range points to (remapped on the host: B T integers).
  Tensor local_rows(const Tensor& tokens) const;
  Tensor extended_table() const;
  // The position rows this rank adds for tokens (B, T): the table's rows of their positions on
  // rank 0, zeros on the others; undefined without a table.
  Tensor position_rows(const Tensor& tokens) const;

  std::shared_ptr<Communicator> tp_;
  int64_t first_token_;
  nn::ContextSplit context_;
};

}  // namespace course::parallel
