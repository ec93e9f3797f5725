// What a parity test of a pipeline records of a few training steps, and the comparison with one
// process's record: the losses of every step, the parameters after every step (the stage's,
// named as in the whole model; alone: the whole model's), and the whole model at the end (the
// pipeline's gathered on every rank; buffers too where a test records them).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/nn/module.h"
#include "common/parallel/comm/communicator.h"
#include "common/testing/tolerance.h"

namespace course::parallel {

using Values = std::map<std::string, std::vector<float>>;

inline Values values_of(const std::vector<std::pair<std::string, nn::Parameter*>>& params) {
  Values out;
  for (const auto& [name, p] : params) out[name] = p->value.to_vector<float>();
  return out;
}

struct Trace {
  std::vector<float> losses;
  std::vector<Values> parameters;
  Values gathered;
};

inline void expect_same_training(const Trace& pipelined, const Trace& alone,
                                 const std::string& what, const testing::Tolerance& tolerance) {
  const int rank = Communicator::world()->rank();
  EXPECT_EQ(pipelined.gathered.size(), alone.gathered.size());
  for (const auto& [name, values] : pipelined.gathered) {
    EXPECT_TRUE(testing::all_close(values, alone.gathered.at(name), tolerance))
        << what << ": " << name << " of the gathered model on rank " << rank;
  }
  ASSERT_EQ(pipelined.losses.size(), alone.losses.size());
  for (size_t step = 0; step < alone.losses.size(); ++step) {
    EXPECT_TRUE(testing::all_close({pipelined.losses[step]}, {alone.losses[step]}, tolerance))
        << what << ": loss of step " << step << " on rank " << rank << ": "
        << pipelined.losses[step] << " against " << alone.losses[step];
    ASSERT_FALSE(pipelined.parameters[step].empty());
    for (const auto& [name, values] : pipelined.parameters[step]) {
      EXPECT_TRUE(testing::all_close(values, alone.parameters[step].at(name), tolerance))
          << what << ": " << name << " after step " << step << " on rank " << rank;
    }
  }
}

}  // namespace course::parallel
