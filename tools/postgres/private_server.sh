#!/usr/bin/env bash
# A private PostgreSQL server for hyper-parameter studies, for a centre without one: a job starts
# it on its first node (or a test on this machine), the workers on every node reach it through
# the URL it prints, and the job stops it at the end. Everything lives in FOLDER: the data, the
# socket, the log, and pgpass (the random password, mode 600: export PGPASSFILE=FOLDER/pgpass).
#
#   private_server.sh start FOLDER [HOST]  prints postgresql://course@HOST:PORT/studies
#                                          (HOST: the name the workers reach, by default this
#                                          node's; PORT: a free one, or COURSE_PG_PORT); a
#                                          FOLDER that holds a stopped server's data starts it
#                                          again on its port (a requeued job's study goes on)
#   private_server.sh stop FOLDER          stops it (the data stays in FOLDER)
#   private_server.sh kill FOLDER          stops it at once, as a failed node would
#   private_server.sh remove FOLDER        stops it if it runs and removes its data and pgpass
#
# Every connection needs the password (scram-sha-256), the socket's too: a shared node's other
# users cannot read or change the study. PostgreSQL refuses to run as root: as root (a test
# machine) it runs as `nobody`, its data in a folder of nobody's under /tmp (FOLDER/data links
# to it).
set -euo pipefail

usage() {
  echo "usage: $0 start FOLDER [HOST] | stop FOLDER | kill FOLDER | remove FOLDER" >&2
  exit 2
}
[[ $# -ge 2 ]] || usage
command=$1 folder=$2
bin=$(pg_config --bindir 2>/dev/null || true)
[[ -x $bin/initdb ]] || bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [[ ! -x $bin/initdb ]]; then
  echo "$0: no PostgreSQL server here (Debian's postgresql package; ./setup.sh installs it)" >&2
  exit 1
fi

# as_server COMMAND...: runs a server command as the user the server runs as.
as_server() {
  if [[ $(id -u) -eq 0 ]]; then
    (cd / && setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@")
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}

# make_cluster: a new cluster in FOLDER/data whose user `course` has a random password, reachable
# from every node with it; writes FOLDER/pgpass for PORT.
make_cluster() {
  local port=$1 data=$folder/data password
  if [[ $(id -u) -eq 0 ]]; then
    data=$(mktemp -d /tmp/course-postgres.XXXXXX)
    chown nobody "$data"
    ln -s "$data" "$folder/data"
  else
    mkdir -p "$data"
  fi
  password=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
  printf '%s\n' "$password" >"$data/.password"
  [[ $(id -u) -ne 0 ]] || chown nobody "$data/.password"
  as_server "$bin/initdb" --pgdata="$data/cluster" --username=course --auth=scram-sha-256 \
    --pwfile="$data/.password" --no-instructions --encoding=UTF8 >"$folder/initdb.log"
  rm -f "$data/.password"
  cat >>"$data/cluster/postgresql.conf" <<CONF
listen_addresses = '*'
unix_socket_directories = '$data'
max_connections = 200
CONF
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$data/cluster/pg_hba.conf"
  printf '*:%s:*:course:%s\n' "$port" "$password" >"$folder/pgpass"
}

start() {
  local host=${1:-$(hostname)} fresh=0
  mkdir -p "$folder"
  folder=$(cd "$folder" && pwd)
  umask 077
  if [[ ! -e $folder/data/cluster ]]; then
    make_cluster "${COURSE_PG_PORT:-$(free_port)}"
    fresh=1
  fi
  local port data
  port=$(cut -d: -f2 "$folder/pgpass")
  data=$(readlink -f "$folder/data")
  as_server "$bin/pg_ctl" --pgdata="$data/cluster" --log="$data/server.log" --wait \
    --options="-p $port" start >/dev/null || {
    echo "$0: the server did not start; its log:" >&2
    cat "$data/server.log" >&2
    ((fresh)) && remove
    exit 1
  }
  if ((fresh)); then
    PGPASSFILE=$folder/pgpass "$bin/createdb" --host=127.0.0.1 --port="$port" \
      --username=course studies
  fi
  echo "postgresql://course@$host:$port/studies"
}

stop() {
  local mode=$1
  [[ -e $folder/data/cluster ]] || {
    echo "$0: no server's data in $folder" >&2
    exit 1
  }
  as_server "$bin/pg_ctl" --pgdata="$(readlink -f "$folder/data")/cluster" --mode="$mode" --wait \
    stop >/dev/null
}

remove() {
  [[ -e $folder/data/cluster/postmaster.pid ]] && stop fast
  rm -rf "$(readlink -f "$folder/data")" "$folder/data" "$folder/pgpass" "$folder/initdb.log"
}

case $command in
  start) start "${3:-}" ;;
  stop) stop fast ;;
  kill) stop immediate ;;
  remove) remove ;;
  *) usage ;;
esac
