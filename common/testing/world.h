// The world communicator of a multi-rank test binary (mpi_gtest_main.cc starts it): the tests'
// shorthand, world()->rank().
#pragma once

#include <memory>

#include "common/parallel/communicator.h"

namespace course::testing {

inline std::shared_ptr<parallel::Communicator> world() { return parallel::Communicator::world(); }

}  // namespace course::testing
