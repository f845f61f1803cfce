#!/usr/bin/env bash
# PostgreSQL's instructions per execution of a statement. valgrind's callgrind counts those of a
# backend that runs the statement prepared (pgbench -M prepared, one client), once for 20 executions
# and once for 220; the difference, over 200, leaves out the connection's start and end. Unlike CPU
# time on a shared machine, the count repeats to the instruction, so a change of a few percent in a
# statement's cost shows at once.
#   scripts/bench/statement-instructions.sh <database URL to copy> <pgbench script>...
# Runs as root: the scratch cluster (a copy of the database, analyzed) belongs to the postgres user
# and is removed afterwards. Needs valgrind, pgbench and PostgreSQL's server binaries (Debian:
# valgrind, postgresql).
set -euo pipefail
source_url=${1:?usage: $0 <database URL to copy> <pgbench script>...}
shift
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
work=$(mktemp -d /tmp/statement-instructions.XXXXXX)
port=5499
chown postgres "$work"
as_postgres() { su postgres -c "$*"; }
psql_scratch() { psql -h "$work" -p $port -U postgres -v ON_ERROR_STOP=1 -q "$@"; }
stop() { as_postgres "$bin/pg_ctl -D $work/data -m fast stop" >/dev/null 2>&1 || true; }
trap 'stop; rm -rf "$work"' EXIT

as_postgres "$bin/initdb -D $work/data -A trust -U postgres" >/dev/null
as_postgres "$bin/pg_ctl -D $work/data -o '-p $port -k $work -c autovacuum=off' -l $work/log -w start" >/dev/null
psql_scratch -c 'CREATE DATABASE measured'
pg_dump --no-owner --no-privileges "$source_url" | psql_scratch -d measured >/dev/null
psql_scratch -d measured -c 'ANALYZE'
stop

mkdir "$work/counts" && chown postgres "$work/counts"
as_postgres "cd $work && nohup valgrind --tool=callgrind --callgrind-out-file=$work/counts/%p \
  $bin/postgres -D $work/data -p $port -k $work -c autovacuum=off >$work/valgrind.log 2>&1 &"
until psql_scratch -d measured -c 'SELECT 1' >/dev/null 2>&1; do sleep 1; done

# The instructions of the busiest backend that ends during `executions` executions of the script
# (pgbench's own first connection, which runs nothing, ends too).
instructions() {
  local before after
  before=$(ls "$work/counts")
  pgbench -h "$work" -p $port -U postgres -n -M prepared -c 1 -t "$1" -f "$2" measured 2>&1 | grep -q "processed: $1/$1" ||
    { echo "$2 failed under pgbench" >&2; exit 1; }
  sleep 2 # callgrind writes a backend's counts as it exits
  after=$(ls "$work/counts")
  comm -13 <(echo "$before") <(echo "$after") | while read -r file; do
    awk '/^(summary|totals):/ { print $2; exit }' "$work/counts/$file"
  done | sort -n | tail -1
}

for script in "$@"; do
  few=$(instructions 20 "$script")
  many=$(instructions 220 "$script")
  echo "$(basename "$script"): $(((many - few) / 200)) instructions per execution"
done
