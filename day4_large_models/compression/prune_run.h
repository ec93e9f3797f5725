// `bazel run //day4_large_models:compress -- prune`: pruning a trained network. For each
// --sparsities value, the network (a lab's checkpoint) loses that fraction of its smallest
// weights globally, is evaluated, then fine-tunes --epochs on the shared training loop with its
// masks re-applied after every step; with --two-four the same for the 2:4 pattern. A table (and
// with --plot a PNG) gives the accuracy against the sparsity measured in the weights.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "day4_large_models/compression/prune_options.h"

namespace day4 {

struct PruneRow {
  std::string pruning;  // "dense", "global 90%", "2:4"
  double sparsity = 0;  // measured: zeros among the prunable weights after fine-tuning
  double pruned_accuracy = 0;
  std::optional<double> tuned_accuracy;  // not for the dense row, nor with --test
};

std::vector<PruneRow> run_pruning(const PruneOptions& options);

}  // namespace day4
