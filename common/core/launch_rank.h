// Which of a launched job's processes this is, before MPI says so: the rank mpirun or srun put in
// the environment (0 when none did). An error every rank meets alike, such as a refused flag, is
// printed by rank 0 alone, instead of once per rank: the flag parser's, and the errors of checks
// run through check_alike_on_every_rank (each lab's validation of its options). Any other error
// may be one rank's own, and every rank prints its own.
#pragma once

#include <functional>

namespace course {

int launcher_rank();  // OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID; 0 when none is set

// Runs `check`; an error it throws is marked as one every rank throws alike.
void check_alike_on_every_rank(const std::function<void()>& check);
bool error_alike_on_every_rank();  // whether such an error was thrown

// Whether this process prints an error every rank meets alike.
inline bool prints_shared_messages() { return launcher_rank() == 0; }

// Called by a rank that does not print such a message before it exits: it waits a second, since a
// launcher stops the whole job at the first process that fails, which could cut rank 0 off
// before its message is out.
void yield_the_message_to_rank_zero();

}  // namespace course
