// Context parallelism's cut of each sequence over cp ranks, with causal load balance (Llama 3,
// picotron): the T positions in 2 cp equal chunks, rank r holding chunk r then chunk
// 2 cp - 1 - r (an early and a late one, so under a causal mask every rank attends as many
// (query, key) pairs). What a rank's layers need to know of it: which positions its rows are
// (the position table's rows), and the rows of a whole-sequence tensor that are its own.
#pragma once

#include <cstdint>
#include <vector>

#include "common/tensor/tensor.h"

namespace course::nn {

struct ContextSplit {
  int rank = 0, ranks = 1;

  bool active() const { return ranks > 1; }
  // The sequence chunk held in slot 0 (the early one) or 1 (the late one).
  int chunk(int slot) const { return slot == 0 ? rank : 2 * ranks - 1 - rank; }
  // The whole sequence's length from this rank's rows (2 chunks).
  int64_t sequence_of(int64_t local_rows) const { return local_rows * ranks; }
  // The positions of this rank's rows, in order. Throws unless 2 ranks divides seq.
  std::vector<int32_t> positions(int64_t seq) const;
  // This rank's rows, in order, of a contiguous (B, T, ...) tensor of any dtype.
  Tensor rows_of(const Tensor& whole) const;
  // The same of a flat (B T,) tensor of B windows (next-token targets), flat again.
  Tensor flat_rows_of(const Tensor& flat, int64_t windows) const;
  // The rows of a (rows, C) table at this rank's positions of a seq-long sequence: (2 T/2cp, C).
  Tensor table_rows(const Tensor& table, int64_t seq) const;
  // table_grad[positions] += rows_grad, the adjoint of table_rows.
  void add_table_rows(const Tensor& rows_grad, int64_t seq, Tensor& table_grad) const;
};

}  // namespace course::nn
