// The MPI communicator behind a Communicator (communicator.h declares it only, so that its users
// need no MPI headers): for the communicator's own sources.
#pragma once

#include <mpi.h>

namespace course::parallel {

struct MpiComm {
  MPI_Comm comm;
};

}  // namespace course::parallel
