// The command line of `compress prune`: the trained network, the fine-tuning's training flags
// (--lr defaulting to 0.01 and --epochs to 1: the network is already trained), the global
// sparsities to try, the 2:4 pattern, and the plot of accuracy against sparsity.
#pragma once

#include <string>
#include <vector>

#include "common/train/lab_flags.h"

namespace day4 {

struct PruneOptions : course::train::TrainingFlags {
  PruneOptions() { lr = 0.01f; }
  std::string trained;  // a checkpoint of a lab's --chkpt
  std::vector<double> sparsities = {0.5, 0.75, 0.9, 0.95};
  bool two_four = true;  // also the 2:4 pattern (TP4.21)
  std::string plot;      // PNG of accuracy against sparsity
};

void add_prune_flags(CLI::App& app, PruneOptions& options);

// Value ranges flags alone cannot check (throws course::Error).
void validate(const PruneOptions& options);

}  // namespace day4
