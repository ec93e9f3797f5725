// `bazel run //day3_data:race -- [recipe flags]`: an entry of the day-3 race. The recipe is the
// day-3 lab's flags (model, image size, batch, lr, wd, momentum, optimizer, schedule,
// augmentation, label smoothing, epochs). A short run first times the step (the lab's --test),
// then the budget rule (day3_data/race_tools/race_budget.h) says how many epochs the recipe may
// train: --test stops there, a run asking for more is refused, and one within the budget trains,
// after writing its recipe and the budget's figures as the first line of --metrics (the
// leaderboard's input, day3_data/race_tools/race_board.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/core/error.h"
#include "common/core/format.h"
#include "common/parallel/comm/communicator.h"
#include "common/parallel/data_parallel/ddp.h"
#include "common/tensor/device.h"
#include "common/train/lab_main.h"
#include "common/train/training_loop.h"
#include "day3_data/race_tools/race_budget.h"
#include "day3_data/trainer.h"

namespace {

using course::parallel::Communicator;
using day3::LabOptions;
using day3::RaceBudget;

// The race's flags; unset (-1) takes the device's default (the cluster's on a GPU, else this
// CPU's on the job's ranks).
struct RaceFlags {
  double budget_s = -1;
  int race_gpus = -1;
  double validation_s = -1;
};

RaceBudget resolve(const RaceFlags& flags, const LabOptions& o, int ranks) {
  const course::Device device = course::named_or_default_device(o.device);
  RaceBudget b = device.is_cpu() ? day3::cpu_budget(ranks) : day3::cluster_budget(ranks);
  if (flags.budget_s != -1) b.budget_s = flags.budget_s;
  if (flags.race_gpus != -1) b.race_gpus = flags.race_gpus;
  if (flags.validation_s != -1) b.validation_s = flags.validation_s;
  day3::validate(b);
  return b;
}

// A flag's float as the decimal the user wrote (0.1, not 0.10000000149).
double decimal(float value) { return std::stod(course::format_number(value)); }

nlohmann::json recipe_json(const LabOptions& o) {
  return {{"model", o.model},
          {"image_size", o.image_size},
          {"batch_size", o.batch_size},
          {"lr", decimal(o.lr)},
          {"wd", decimal(o.wd)},
          {"mom", decimal(o.mom)},
          {"optimizer", course::optim::optimizer_name(o.optimizer)},
          {"schedule", course::optim::schedule_name(o.schedule)},
          {"auto_augment", course::augment_policy_name(o.auto_augment)},
          {"mixup", decimal(o.mixup)},
          {"cutmix", decimal(o.cutmix)},
          {"label_smoothing", decimal(o.label_smoothing)},
          {"epochs", o.epochs},
          {"amp", o.amp},
          {"channels_last", o.channels_last}};
}

// Times --test-nsteps steps of the recipe (a fresh model, nothing written) and applies the rule.
day3::EpochEstimate measure(const LabOptions& o, const RaceBudget& budget,
                            const std::shared_ptr<Communicator>& world) {
  const bool lead = world->rank() == 0;
  LabOptions probe = o;
  probe.test = true;
  probe.chkpt = probe.metrics = probe.logdir = probe.profile = "";
  if (!o.test && lead) {
    std::printf("timing %lld steps of the recipe first\n", (long long)o.test_nsteps);
  }
  const day3::LabResult timed = day3::run_lab(probe, {}, world);
  COURSE_CHECK(timed.timing.steps > 0, "timing a step needs at least 2 steps (the first is ",
               "not timed): raise --test-nsteps");
  // Every rank decides on the slowest rank's step (the one a synchronised step waits for).
  const double step_ms =
      course::parallel::allreduce_max({static_cast<float>(timed.timing.step_ms)}, *world)[0];
  const day3::EpochEstimate e =
      day3::estimate_epochs(budget, step_ms / 1000, timed.steps_per_epoch);
  if (!lead) return e;
  std::printf(
      "race budget: %s\nstep %.1f ms (load %.1f ms), %lld batches per epoch on %d GPU(s): "
      "%.1f s per epoch in the race\neligible to run %lld epochs\n",
      day3::describe(budget).c_str(), step_ms,
      timed.timing.mean_ms[static_cast<int>(course::train::Phase::kLoad)],
      static_cast<long long>(e.n_batches), budget.gpus, e.epoch_s,
      static_cast<long long>(e.epochs));
  std::fflush(stdout);
  return e;
}

void run_race(const LabOptions& o, const RaceFlags& flags) {
  day3::validate(o);
  COURSE_CHECK(!o.findlr, "the race trains a recipe: run --findlr with //day3_data:lab");
  const auto world = Communicator::world();
  const RaceBudget budget = resolve(flags, o, world->size());
  if (!o.resume.empty()) {  // a requeued entry: its budget was checked when it started
    day3::run_lab(o, {}, world);
    return;
  }
  course::train::check_output_flags(o);  // before the timing run, which writes none of them
  const day3::EpochEstimate e = measure(o, budget, world);
  COURSE_CHECK(o.epochs <= e.epochs, "--epochs ", o.epochs, " is over the race's budget (",
               day3::describe(budget), "): this recipe is eligible to run ", e.epochs, " epochs");
  if (o.test) return;
  if (!o.metrics.empty() && world->rank() == 0) {
    std::ofstream(o.metrics, std::ios::app)
        << nlohmann::json{{"recipe", recipe_json(o)},
                          {"race",
                           {{"budget_s", budget.budget_s},
                            {"race_gpus", budget.race_gpus},
                            {"gpus", budget.gpus},
                            {"validation_s", budget.validation_s},
                            {"step_ms", e.step_s * 1000},
                            {"n_batches", e.n_batches},
                            {"epoch_s", e.epoch_s},
                            {"eligible_epochs", e.epochs}}}}
               .dump()
        << "\n";
  }
  day3::run_lab(o, {}, world);
}

}  // namespace

int main(int argc, char** argv) {
  LabOptions options;
  RaceFlags flags;
  CLI::App app(
      "Day 3's race: a recipe of the day-3 lab's flags, within the race's budget of GPU time. "
      "--test times the step and prints the epochs the budget allows");
  day3::add_lab_flags(app, options);
  app.add_option("--budget-s", flags.budget_s,
                 "the race's time per entry, s (default: 1800 on a GPU, 900 on the CPU)");
  app.add_option("--race-gpus", flags.race_gpus,
                 "GPUs (ranks) of an entry in the race (default: 32 on a GPU, the job's ranks on "
                 "the CPU)");
  app.add_option("--validation-s", flags.validation_s,
                 "validation time per epoch in the race, s (default: 20 on a GPU, 3 on the CPU)");
  course::train::parse_or_exit(app, argc, argv);
  return course::train::lab_main([&] { run_race(options, flags); });
}
