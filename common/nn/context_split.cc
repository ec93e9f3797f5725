// A rank's chunks of the sequence: two contiguous runs of positions, so its rows of a tensor or
// a table are two slices.
#include "common/nn/context_split.h"

#include "common/core/error.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/permute.h"

namespace course::nn {

namespace {

void check_cut(const ContextSplit& split, int64_t seq) {
  COURSE_CHECK(split.ranks > 0 && split.rank >= 0 && split.rank < split.ranks,
               "context-parallel rank ", split.rank, " of ", split.ranks);
  COURSE_CHECK(seq > 0 && seq % (2 * split.ranks) == 0, "a sequence of ", seq,
               " positions does not cut into 2 x ", split.ranks,
               " equal chunks (context parallelism gives each rank two)");
}

}  // namespace

std::vector<int32_t> ContextSplit::positions(int64_t seq) const {
  check_cut(*this, seq);
  const int64_t length = seq / (2 * ranks);
  std::vector<int32_t> out;
  for (int slot = 0; slot < 2; ++slot) {
    for (int64_t t = 0; t < length; ++t)
      out.push_back(static_cast<int32_t>(chunk(slot) * length + t));
  }
  return out;
}

Tensor ContextSplit::rows_of(const Tensor& whole) const {
  COURSE_CHECK(whole.dim() >= 2 && whole.memory_format() == MemoryFormat::kContiguous,
               "context-parallel rows of a contiguous (B, T, ...) tensor, got ", whole.str());
  check_cut(*this, whole.size(1));
  const int64_t batch = whole.size(0), length = whole.size(1) / (2 * ranks);
  const int64_t row = whole.numel() / (batch * whole.size(1));
  const Tensor chunks = permute(whole.view({batch, 2 * ranks, length * row}), {1, 0, 2});
  Tensor mine = Tensor::empty({2, batch, length * row}, whole.dtype(), whole.device());
  for (int slot = 0; slot < 2; ++slot) {
    Tensor into = mine.slice(slot, slot + 1);
    copy_(into, chunks.slice(chunk(slot), chunk(slot) + 1));
  }
  Shape shape = whole.shape();
  shape[1] = 2 * length;
  return permute(mine, {1, 0, 2}).view(shape);
}

Tensor ContextSplit::flat_rows_of(const Tensor& flat, int64_t windows) const {
  COURSE_CHECK(flat.dim() == 1 && windows > 0 && flat.numel() % windows == 0, "a flat tensor of ",
               windows, " windows, got ", flat.str());
  const Tensor rows = rows_of(flat.view({windows, flat.numel() / windows}));
  return rows.view({rows.numel()});
}

Tensor ContextSplit::table_rows(const Tensor& table, int64_t seq) const {
  check_cut(*this, seq);
  COURSE_CHECK(table.dim() == 2 && table.size(0) >= seq, "a (rows, C) table of at least ", seq,
               " rows, got ", table.str());
  const int64_t length = seq / (2 * ranks);
  Tensor rows = Tensor::empty({2 * length, table.size(1)}, table.dtype(), table.device());
  for (int slot = 0; slot < 2; ++slot) {
    Tensor into = rows.slice(slot * length, (slot + 1) * length);
    copy_(into, table.slice(chunk(slot) * length, (chunk(slot) + 1) * length));
  }
  return rows;
}

void ContextSplit::add_table_rows(const Tensor& rows_grad, int64_t seq, Tensor& table_grad) const {
  check_cut(*this, seq);
  const int64_t length = seq / (2 * ranks);
  COURSE_CHECK(rows_grad.dim() == 2 && rows_grad.size(0) == 2 * length && table_grad.dim() == 2 &&
                   table_grad.size(0) >= seq && rows_grad.size(1) == table_grad.size(1),
               "adding ", rows_grad.str(), " into the rows of ", table_grad.str());
  for (int slot = 0; slot < 2; ++slot) {
    Tensor into = table_grad.slice(chunk(slot) * length, (chunk(slot) + 1) * length);
    axpy_(1.0f, rows_grad.slice(slot * length, (slot + 1) * length), into);
  }
}

}  // namespace course::nn
