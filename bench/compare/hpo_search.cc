// The project's side of the sampler comparison with Optuna (bench/compare/hpo_compare.sh): the
// best value each seed's study finds on a synthetic function within a trial budget, and the
// seconds the studies took. The sampler proposes from the study's trials exactly as a worker's
// does (common/hpo/synthetic_study.h), without the database.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "common/hpo/synthetic_study.h"

int main(int argc, char** argv) {
  namespace hpo = course::hpo;
  CLI::App app("Best values found by the project's samplers on a synthetic function");
  std::string function = "himmelblau", sampler_spec = "tpe";
  int trials = 100, seeds = 20;
  app.add_option("--function", function)->check(CLI::IsMember({"rosenbrock", "himmelblau"}));
  app.add_option("--sampler", sampler_spec, "random, grid[:K], tpe[:univariate,noliar]");
  app.add_option("--trials", trials)->check(CLI::PositiveNumber);
  app.add_option("--seeds", seeds)->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    const std::unique_ptr<hpo::Sampler> sampler = hpo::make_sampler(sampler_spec);
    const auto start = std::chrono::steady_clock::now();
    for (int seed = 0; seed < seeds; ++seed) {
      const double best =
          hpo::best_of_synthetic_study(function, *sampler, static_cast<uint64_t>(seed), trials);
      std::printf("best %d %.17g\n", seed, best);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("seconds %.3f\n", seconds);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}
