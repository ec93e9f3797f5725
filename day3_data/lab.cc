// `bazel run //day3_data:lab -- [flags]`: the day-3 lab (see day3_data/README.md), or with
// --findlr its learning-rate finder; under mpirun or srun its ranks train together (DDP). The
// same program is built with the trainee's exercises (//day3_data:lab) and with the solutions
// (//solutions/day3_data:lab).
#include "common/core/error.h"
#include "common/parallel/comm/communicator.h"
#include "common/train/lab_main.h"
#include "day3_data/lr_finder.h"
#include "day3_data/trainer.h"

int main(int argc, char** argv) {
  const day3::LabOptions options = day3::parse_options(argc, argv);
  return course::train::lab_main([&] {
    const auto world = course::parallel::Communicator::world();
    if (options.findlr) {
      COURSE_CHECK(world->size() == 1,
                   "--findlr sweeps on one process: run it without mpirun or srun");
      day3::find_lr(options);
    } else {
      day3::run_lab(options, {}, world);
    }
  });
}
