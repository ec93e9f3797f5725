#!/usr/bin/env bash
# The HPO tool as people use it (the solutions' build): a synthetic study searched by two workers
# at once (every trial run once), its status, best trial and plots, in a SQLite file and on a
# private PostgreSQL server; a grid that runs out; the day-3 lab as
# the objective, its second trial pruned by the median rule after one epoch; a worker killed
# in the middle of its trial leaves it failed and the study goes on; bad input ends with one
# message and a non-zero exit. The trainee's build runs the random sampler and fails with the
# exercise's TODO (exit 3) when TPE's split or a pruner's rule is needed.
set -uo pipefail
source "$1"  # expect
trainee=$2
hpo=$3
optuna_python=$4  # Optuna 5 (setup.sh), and the script that reads exports with it
optuna_check=$5
private_server=$6  # tools/postgres/private_server.sh
dir=$(mktemp -d)
trap '"$private_server" remove "$dir/postgres" >/dev/null 2>&1; rm -rf "$dir"' EXIT
db=$dir/studies.db
fail() {
  echo "FAILED: $*"
  exit 1
}

# two_workers STORE: the study "him" made on STORE and searched by two workers at once, 20 trials
# each, every one of the 40 run once.
two_workers() {
  expect 0 "0 trials" "$hpo" create --db "$1" --study him --function himmelblau --seed 3
  "$hpo" worker --db "$1" --study him --trials 20 >"$dir/w1.log" 2>&1 &
  "$hpo" worker --db "$1" --study him --trials 20 >"$dir/w2.log" 2>&1 &
  wait
  expect 0 "40 trials: 40 complete, 0 pruned, 0 failed, 0 running" "$hpo" status --db "$1" \
    --study him
  [[ $(cat "$dir/w1.log" "$dir/w2.log" | grep -c "complete:") -eq 40 ]] ||
    fail "the two workers did not complete 40 trials between them on $1"
}

two_workers "$db"
[[ $("$hpo" status --db "$db" --study him --trials | grep -cE "^ +[0-9]+ complete") -eq 40 ]] ||
  fail "status --trials does not list 40 complete trials"
expect 0 "--x " "$hpo" best --db "$db" --study him
expect 0 "wrote $dir/slice.png" "$hpo" plot --db "$db" --study him --out "$dir"
for png in history slice contour; do
  [[ $(head -c 4 "$dir/$png.png" | od -An -tx1 | tr -d ' ') == 89504e47 ]] ||
    fail "$png.png is not a PNG file"
done
grep -q "^number,state,value,best_so_far,seconds,x,y$" "$dir/trials.csv" ||
  fail "trials.csv has no header"

# The same study on a PostgreSQL server: the tables made by `create`, refused before it.
server=$("$private_server" start "$dir/postgres" 127.0.0.1) || fail "no PostgreSQL server"
export PGPASSFILE=$dir/postgres/pgpass
expect 1 "holds no studies (create one first" "$hpo" worker --db "$server" --study him
two_workers "$server"
expect 0 "wrote $dir/pg.journal: study him, 40 trials" "$hpo" export --db "$server" --study him \
  --optuna "$dir/pg.journal"
expect 1 "--journal is a SQLite file's" "$hpo" create --db "$server" --study j \
  --function himmelblau --journal delete
expect 1 "scheme 'mysql'" "$hpo" status --db mysql://course@127.0.0.1/studies --study him
expect 1 "carries a password: put it in ~/.pgpass" "$hpo" status \
  --db "${server/course@/course:secret@}" --study him
expect 1 "cannot connect to the study server postgresql://course@127.0.0.1:1/studies" "$hpo" \
  status --db postgresql://course@127.0.0.1:1/studies --study him

expect 0 "sampler grid:3" "$hpo" create --db "$db" --study grid --function rosenbrock \
  --sampler grid:3
expect 0 "the sampler has no point left" "$hpo" worker --db "$db" --study grid --trials 20
expect 0 "9 trials: 9 complete" "$hpo" status --db "$db" --study grid

# The lab as objective: lr 0.1 first (the seed's grid order), then lr 1e-5, whose accuracy
# after one epoch is below the first trial's, so the median pruner stops it there.
lab_flags="--train-subset 1000 --test-subset 2000 --epochs 2 --batch-size 50 --num-workers 1"
lab_flags+=" --no-progress"
expect 0 "maximize lab" "$hpo" create --db "$db" --study lab --lab="$lab_flags" \
  --space "lr=float:0.00001:0.1:log" --sampler grid:2 --pruner median:startup=1 --seed 0
expect 0 "trial 0: --lr 0.1" "$hpo" worker --db "$db" --study lab --trials 1
expect 0 "trial 1 pruned" "$hpo" worker --db "$db" --study lab --trials 1
expect 0 "2 trials: 1 complete, 1 pruned" "$hpo" status --db "$db" --study lab
grep -qE "^ +1 pruned +- +1 " <<<"$("$hpo" status --db "$db" --study lab --trials)" ||
  fail "the pruned trial does not show its one reported epoch"

# A worker killed mid-trial: its trial is failed once its heartbeat is older than the grace.
expect 0 "0 trials" "$hpo" create --db "$db" --study killed --lab="$lab_flags" \
  --space "lr=float:0.01:0.1:log"
"$hpo" worker --db "$db" --study killed --trials 1 --heartbeat 0.2 --grace 1 >"$dir/victim.log" 2>&1 &
victim=$!
deadline=$((SECONDS + 60))
until grep -q "^trial 0:" "$dir/victim.log"; do
  ((SECONDS < deadline)) || fail "the victim worker never started its trial"
  sleep 0.2
done
kill -9 "$victim"
wait "$victim" 2>/dev/null
sleep 1.5
expect 0 "trial 1 complete" "$hpo" worker --db "$db" --study killed --trials 1 \
  --heartbeat 0.2 --grace 1
expect 0 "2 trials: 1 complete, 0 pruned, 1 failed" "$hpo" status --db "$db" --study killed

# Optuna opens the exports: two workers' study, the pruned lab trial with its intermediate value,
# the killed worker's failed trial; each trial compared with the database read by sqlite3.
for study in him:complete=40 lab:complete=1,pruned=1 killed:complete=1,failed=1; do
  expect 0 "wrote $dir/${study%%:*}.journal: study ${study%%:*}" "$hpo" export --db "$db" \
    --study "${study%%:*}" --optuna "$dir/${study%%:*}.journal"
  expect 0 "read study ${study%%:*}" "$optuna_python" "$optuna_check" \
    "$dir/${study%%:*}.journal" "$db" "${study%%:*}" --expect-states "${study#*:}"
done
expect 1 "no study named 'x'" "$hpo" export --db "$db" --study x --optuna "$dir/x.journal"
[[ ! -e $dir/x.journal ]] || fail "a refused export wrote a journal"
expect 1 "cannot write the Optuna journal $dir/none/x.journal" "$hpo" export --db "$db" \
  --study him --optuna "$dir/none/x.journal"

# The trainee's tool: random sampling works; TPE needs TP3.8 after its 10 start-up trials, the
# median pruner TP3.10 once 5 trials are complete, successive halving TP3.9 at its first rung.
expect 0 "0 trials" "$trainee" create --db "$db" --study random --function rosenbrock \
  --sampler random
expect 0 "trial 11 complete" "$trainee" worker --db "$db" --study random --trials 12
expect 0 "0 trials" "$trainee" create --db "$db" --study todo_tpe --function rosenbrock
expect 3 "TODO TP3.8" "$trainee" worker --db "$db" --study todo_tpe --trials 12
expect 0 "10 trials: 10 complete, 0 pruned, 0 failed" "$trainee" status --db "$db" --study todo_tpe
expect 0 "0 trials" "$trainee" create --db "$db" --study todo_halving --lab="$lab_flags" \
  --space "lr=float:0.01:0.1" --pruner sh:min=1
expect 3 "TODO TP3.9" "$trainee" worker --db "$db" --study todo_halving --trials 1
# A database in a folder not made yet (a login node's first `create --db studies/lab.db`).
expect 0 "0 trials" "$hpo" create --db "$dir/studies/nested/lab.db" --study him \
  --function himmelblau
[[ -f $dir/studies/nested/lab.db ]] || { echo "FAILED: no database in the made folder"; exit 1; }

# Bad input: one message, a non-zero exit, nothing created.
touch "$dir/a_file"
expect 1 "cannot make the study database's folder" "$hpo" create --db "$dir/a_file/lab.db" \
  --study him --function himmelblau
expect 1 "already exists" "$hpo" create --db "$db" --study him --function himmelblau
expect 105 "not in {rosenbrock,himmelblau}" "$hpo" create --db "$db" --study x --function nope
expect 1 "unknown TPE setting 'foo'" "$hpo" create --db "$db" --study x --function himmelblau \
  --sampler tpe:foo
expect 1 "unknown pruner 'bogus'" "$hpo" create --db "$db" --study x --function himmelblau \
  --pruner bogus
expect 1 "search space: unknown kind 'bool'" "$hpo" create --db "$db" --study x \
  --lab="--epochs 1" --space "lr=bool:0:1"
expect 1 "takes numerical parameters x and y" "$hpo" create --db "$db" --study x \
  --function himmelblau --space "a=float:0:1"
expect 1 "--lab needs --space" "$hpo" create --db "$db" --study x --lab="--epochs 1"
expect 1 "either --function or --lab" "$hpo" create --db "$db" --study x
expect 109 "--bogus" "$hpo" create --db "$db" --study x --lab="--epochs 1" \
  --space "bogus=int:1:3"
expect 1 "must maximize" "$hpo" create --db "$db" --study x --lab="--epochs 1" \
  --space "lr=float:0.01:0.1" --direction minimize
expect 1 "no study named 'x'" "$hpo" status --db "$db" --study x
expect 1 "no study database at $dir/none.db" "$hpo" status --db "$dir/none.db" --study him
expect 1 "no study database at $dir/none.db" "$hpo" worker --db "$dir/none.db" --study him
[[ ! -e $dir/none.db ]] || fail "a worker created an empty database"
expect 1 "--grace must be more than twice --heartbeat" "$hpo" worker --db "$db" --study him \
  --heartbeat 10 --grace 5
echo "not a database, and long enough for SQLite to read its header" >"$dir/text.db"
expect 1 "cannot use the study database" "$hpo" status --db "$dir/text.db" --study him
expect 1 "is not a folder" "$hpo" plot --db "$db" --study him --out "$dir/none"
expect 0 "0 trials" "$hpo" create --db "$db" --study empty --function himmelblau
expect 1 "has no complete trial yet" "$hpo" best --db "$db" --study empty
expect 1 "has no complete trial to plot yet" "$hpo" plot --db "$db" --study empty --out "$dir"
