// A trained network for Part 7's modes (distill's teacher, quantize's and prune's model): a
// lab's checkpoint (--chkpt of day 1 or day 3) loaded into the network it names, after checking
// that it is of the expected model.
#pragma once

#include <memory>
#include <string>

#include "common/data/dataset.h"
#include "common/nn/module.h"
#include "common/train/lab_flags.h"

namespace day4 {

// `flag` names the option the path came from, for the error message ("--teacher").
std::unique_ptr<course::nn::Module> load_trained(const std::string& path, const std::string& model,
                                                 const std::string& flag,
                                                 const course::Dataset& data,
                                                 course::Device device);

// The required flag naming a trained network's checkpoint (quantize's and prune's --trained,
// distill's --teacher); `what` says whose it is ("the trained teacher").
void add_checkpoint_flag(CLI::App& app, const std::string& name, std::string& path,
                         const std::string& what);

}  // namespace day4
