"""Opens an `hpo export --optuna` journal with Optuna and compares every trial with the study as
the course's SQLite database holds it, read here with Python's own sqlite3 (not through the
course's code): numbers, states, values, each parameter with its distribution, intermediate
values, the worker and the rungs, and the study's direction and settings.

  python optuna_check.py JOURNAL DATABASE STUDY [--expect-states complete=N,pruned=N,...]
"""
import argparse
import math
import sqlite3
import sys

import optuna

STATES = {"running": optuna.trial.TrialState.RUNNING, "complete": optuna.trial.TrialState.COMPLETE,
          "pruned": optuna.trial.TrialState.PRUNED, "failed": optuna.trial.TrialState.FAIL}


def space_of(text):
    """The course's search space text as (name, kind, low, high, log, choices) tuples."""
    params = []
    for part in filter(None, text.split(";")):
        name, spec = part.split("=", 1)
        fields = spec.split(":")
        if fields[0] == "cat":
            params.append((name, "cat", None, None, False, fields[1].split(",")))
        else:
            params.append((name, fields[0], float(fields[1]), float(fields[2]),
                           len(fields) == 4, None))
    return params


def expected_distribution(kind, low, high, log, choices):
    if kind == "cat":
        return optuna.distributions.CategoricalDistribution(choices)
    if kind == "int":
        return optuna.distributions.IntDistribution(int(low), int(high), log=log)
    return optuna.distributions.FloatDistribution(low, high, log=log)


def same(a, b):
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b))


def check(journal, database, study_name):
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal))
    study = optuna.load_study(study_name=study_name, storage=storage)
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    study_id, direction, space_text, sampler, pruner, seed = db.execute(
        "SELECT id, direction, space, sampler, pruner, seed FROM studies WHERE name = ?",
        (study_name,)).fetchone()
    want = optuna.study.StudyDirection.MINIMIZE if direction == "minimize" else \
        optuna.study.StudyDirection.MAXIMIZE
    assert study.direction == want, (study.direction, direction)
    attrs = study.user_attrs
    assert (attrs["search_space"], attrs["sampler"], attrs["pruner"], attrs["seed"]) == \
        (space_text, sampler, pruner, seed), attrs
    space = space_of(space_text)
    rows = db.execute("SELECT id, number, state, value, worker FROM trials WHERE study_id = ? "
                      "ORDER BY number", (study_id,)).fetchall()
    trials = study.get_trials(deepcopy=False)
    assert len(trials) == len(rows), (len(trials), len(rows))
    for trial, (trial_id, number, state, value, worker) in zip(trials, rows):
        where = f"trial {number}"
        assert trial.number == number, where
        assert trial.state == STATES[state], (where, trial.state, state)
        assert same(trial.value, value), (where, trial.value, value)
        assert trial.user_attrs["worker"] == worker, where
        values = dict(db.execute("SELECT position, value FROM params WHERE trial_id = ?",
                                 (trial_id,)).fetchall())
        assert len(trial.params) == len(values), (where, trial.params, values)
        for position, (name, kind, low, high, log, choices) in enumerate(space):
            dist = expected_distribution(kind, low, high, log, choices)
            assert trial.distributions[name] == dist, (where, name, trial.distributions[name])
            stored = values[position]
            wanted = choices[int(stored)] if kind == "cat" else \
                int(round(stored)) if kind == "int" else stored
            assert trial.params[name] == wanted, (where, name, trial.params[name], wanted)
        steps = dict(db.execute("SELECT step, value FROM intermediate WHERE trial_id = ?",
                                (trial_id,)).fetchall())
        assert set(trial.intermediate_values) == set(steps), (where, trial.intermediate_values)
        for step, value in steps.items():
            assert same(trial.intermediate_values[step], value), (where, step)
        rungs = dict(db.execute("SELECT rung, value FROM rungs WHERE trial_id = ?",
                                (trial_id,)).fetchall())
        assert {int(k): v for k, v in trial.user_attrs["rungs"].items()} == rungs, where
        assert trial.datetime_start is not None, where
        assert (trial.datetime_complete is None) == (state == "running"), where
    return trials


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("journal")
    parser.add_argument("database")
    parser.add_argument("study")
    parser.add_argument("--expect-states", default="",
                        help="complete=N,pruned=N,failed=N: the counts Optuna must see")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    trials = check(args.journal, args.database, args.study)
    counts = {name: sum(t.state == state for t in trials) for name, state in STATES.items()}
    for item in filter(None, args.expect_states.split(",")):
        name, count = item.split("=")
        assert counts[name] == int(count), (args.study, name, counts)
    print(f"optuna {optuna.__version__} read study {args.study}: {len(trials)} trials match "
          f"the database ({', '.join(f'{n} {k}' for k, n in counts.items())})")


if __name__ == "__main__":
    sys.exit(main())
