// `bazel run //day2_ddp:lab -- [flags]` (one process) or `mpirun -np 4 bazel-bin/day2_ddp/lab`
// (four ranks): the day-2 lab (see day2_ddp/README.md). Built with the trainee's exercises
// (//day2_ddp:lab) and with the solutions (//solutions/day2_ddp:lab). A rank that fails ends
// the whole job.
#include "common/parallel/comm/communicator.h"
#include "common/train/lab_main.h"
#include "day2_ddp/trainer.h"

int main(int argc, char** argv) {
  const day2::LabOptions options = day2::parse_options(argc, argv);
  return course::parallel::finish_job(course::train::lab_main([&] { day2::run_lab(options); }));
}
