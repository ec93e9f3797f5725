"""Optuna's side of the sampler comparison (bench/compare/hpo_compare.sh): the best value each
seed's study finds on a synthetic function within a trial budget, and the seconds it took,
printed in the same form as the project's hpo_search."""
import argparse
import time

import optuna

FUNCTIONS = {
    "rosenbrock": (2.0, lambda x, y: (1 - x) ** 2 + 100 * (y - x * x) ** 2),
    "himmelblau": (5.0, lambda x, y: (x * x + y - 11) ** 2 + (x + y * y - 7) ** 2),
}

parser = argparse.ArgumentParser()
parser.add_argument("--function", choices=FUNCTIONS, default="himmelblau")
parser.add_argument("--sampler", choices=["tpe", "tpe:univariate", "random"], default="tpe")
parser.add_argument("--trials", type=int, default=100)
parser.add_argument("--seeds", type=int, default=20)
args = parser.parse_args()
optuna.logging.set_verbosity(optuna.logging.ERROR)
bound, function = FUNCTIONS[args.function]


def objective(trial):
    return function(trial.suggest_float("x", -bound, bound), trial.suggest_float("y", -bound, bound))


start = time.perf_counter()
for seed in range(args.seeds):
    if args.sampler == "random":
        sampler = optuna.samplers.RandomSampler(seed=seed)
    else:  # Optuna 5's default is the multivariate TPE
        sampler = optuna.samplers.TPESampler(seed=seed, multivariate=args.sampler == "tpe")
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=args.trials)
    print(f"best {seed} {study.best_value!r}")
print(f"seconds {time.perf_counter() - start:.3f}")
