"""Writes the reference decisions the HPO tests compare against, from Optuna itself.

Run in the comparison environment (bench/compare/setup_venv.sh installs optuna):
  .venv-compare/bin/python common/hpo/tests/make_optuna_testdata.py common/hpo/tests/testdata

pruner_traces.csv: learning curves of 60 trials (seeded), each replayed through Optuna's
pruners in trial order; pruner_decisions.csv: at every step Optuna looked at, whether it
pruned. parzen.tsv: Optuna's Parzen estimator (log density) on fixed observations.
"""
import csv
import math
import sys

import numpy as np
import optuna
from optuna.distributions import FloatDistribution, IntDistribution, CategoricalDistribution
from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator, _ParzenEstimatorParameters
from optuna.samplers._tpe.sampler import default_weights

optuna.logging.set_verbosity(optuna.logging.ERROR)
out = sys.argv[1]

N_TRIALS, N_STEPS = 60, 27
rng = np.random.default_rng(2026)
curves = []
for i in range(N_TRIALS):
    final = rng.uniform(0.5, 0.95)
    tau = rng.uniform(1.0, 8.0)
    noise = rng.normal(0.0, 0.01, N_STEPS)
    curves.append([final * (1 - math.exp(-s / tau)) + noise[s - 1] for s in range(1, N_STEPS + 1)])

with open(f"{out}/pruner_traces.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["trial", "step", "value"])
    for i, curve in enumerate(curves):
        for s, v in enumerate(curve, start=1):
            w.writerow([i, s, repr(float(v))])

PRUNERS = {
    "median": lambda: optuna.pruners.MedianPruner(),
    "sh": lambda: optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=4),
    "sh:rate=1": lambda: optuna.pruners.SuccessiveHalvingPruner(
        min_resource=1, reduction_factor=4, min_early_stopping_rate=1),
    "hyperband:max=27": lambda: optuna.pruners.HyperbandPruner(
        min_resource=1, max_resource=27, reduction_factor=3),
}

with open(f"{out}/pruner_decisions.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["pruner", "direction", "trial", "step", "pruned"])
    for spec, make in PRUNERS.items():
        for direction in ["maximize", "minimize"]:
            sign = 1.0 if direction == "maximize" else -1.0
            study = optuna.create_study(study_name="trace", direction=direction,
                                        pruner=make(), sampler=optuna.samplers.RandomSampler(0))
            for i, curve in enumerate(curves):
                trial = study.ask()
                state = optuna.trial.TrialState.COMPLETE
                for s, v in enumerate(curve, start=1):
                    trial.report(sign * v, s)
                    pruned = trial.should_prune()
                    w.writerow([spec, direction, i, s, int(pruned)])
                    if pruned:
                        state = optuna.trial.TrialState.PRUNED
                        break
                if state == optuna.trial.TrialState.PRUNED:
                    study.tell(trial, state=state)
                else:
                    study.tell(trial, sign * curve[-1])

params = _ParzenEstimatorParameters(prior_weight=1.0, consider_magic_clip=True,
                                    consider_endpoints=False, weights=default_weights,
                                    multivariate=False)
CASES = [
    ("x=float:0:1", FloatDistribution(0, 1), [0.2, 0.5, 0.9]),
    ("x=float:0:1", FloatDistribution(0, 1), []),
    ("x=float:0:1", FloatDistribution(0, 1), [0.7]),
    ("x=float:0.0001:1:log", FloatDistribution(1e-4, 1, log=True), [1e-3, 2e-3, 0.05, 0.3]),
    ("x=int:1:10", IntDistribution(1, 10), [2, 2, 7]),
    ("x=int:16:512:log", IntDistribution(16, 512, log=True), [32, 64, 300]),
    ("x=cat:a,b,c", CategoricalDistribution(["a", "b", "c"]), [0, 0, 2]),
    ("x=float:-5:5", FloatDistribution(-5, 5), list(rng.uniform(-5, 5, 30))),
]
with open(f"{out}/parzen.tsv", "w", newline="") as f:
    w = csv.writer(f, delimiter="\t", lineterminator="\n")
    w.writerow(["space", "observations", "x", "log_pdf"])
    for space, dist, obs in CASES:
        pe = _ParzenEstimator({"x": np.asarray(obs, dtype=float)}, {"x": dist}, params)
        if isinstance(dist, CategoricalDistribution):
            xs = [0.0, 1.0, 2.0]
        elif isinstance(dist, IntDistribution):
            xs = [float(v) for v in sorted({dist.low, dist.high, (dist.low + dist.high) // 2,
                                            obs[0] if obs else dist.low})]
        else:
            lo, hi = dist.low, dist.high
            xs = [lo, hi] + [float(v) for v in np.linspace(lo, hi, 7)[1:-1]]
        for x in xs:
            lp = pe.log_pdf({"x": np.asarray([x])})[0]
            w.writerow([space, " ".join(repr(float(o)) for o in obs), repr(x), repr(float(lp))])

# TPE's acquisition (log l - log g) at fixed candidates after 30 finished Himmelblau trials,
# multivariate, as Optuna's sampler computes it: the split, both estimators, the difference.
from optuna.samplers._tpe.sampler import _split_trials, default_gamma

def himmelblau(x, y):
    return (x * x + y - 11) ** 2 + (x + y * y - 7) ** 2

space = {"x": FloatDistribution(-5, 5), "y": FloatDistribution(-5, 5)}
study = optuna.create_study(direction="minimize")
history = rng.uniform(-5, 5, (30, 2))
for x, y in history:
    study.add_trial(optuna.trial.create_trial(params={"x": x, "y": y}, distributions=space,
                                              value=himmelblau(x, y)))
trials = study.get_trials()
below, above = _split_trials(study, trials, default_gamma(len(trials)))
def estimator(group):
    obs = {k: np.asarray([t.params[k] for t in group]) for k in space}
    return _ParzenEstimator(obs, space, params)
candidates = rng.uniform(-5, 5, (12, 2))
samples = {"x": candidates[:, 0], "y": candidates[:, 1]}
acquisition = estimator(below).log_pdf(samples) - estimator(above).log_pdf(samples)
with open(f"{out}/tpe_acquisition.tsv", "w", newline="") as f:
    w = csv.writer(f, delimiter="\t", lineterminator="\n")
    w.writerow(["kind", "x", "y", "value"])
    for x, y in history:
        w.writerow(["trial", repr(float(x)), repr(float(y)), repr(float(himmelblau(x, y)))])
    for (x, y), a in zip(candidates, acquisition):
        w.writerow(["candidate", repr(float(x)), repr(float(y)), repr(float(a))])
