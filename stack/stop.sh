#!/bin/bash
# Stop the Connect supervisor -> Connect -> Apicurio -> Kafka -> the Hive metastore -> SeaweedFS (by the pids recorded at start)
# -> MariaDB -> Postgres (pg_ctl).
. "$(dirname "$0")/env.sh"
cd "$STACK"
# The supervisor first: it would restart what stopping Connect fails.
for f in connect/supervisor.pid connect/connect.pid apicurio/auth-proxy.pid apicurio/apicurio.pid kafka/kafka.pid metastore/metastore.pid seaweedfs/weed.pid; do
  c=$(basename $f .pid)
  if [ -f $f ] && kill -0 "$(cat $f)" 2>/dev/null; then
    p=$(cat $f); kill -TERM "$p"
    for _ in $(seq 1 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$p" 2>/dev/null && { echo "$c did not stop, sending KILL"; kill -KILL "$p"; }
    echo "$c (pid $p) stopped"
  fi
  rm -f $f
done
if mariadb-admin --defaults-file="$MARIADB_DIR/my.cnf" -uroot status >/dev/null 2>&1; then
  mariadb-admin --defaults-file="$MARIADB_DIR/my.cnf" -uroot shutdown && echo "mariadb stopped"
fi
if $PGBIN/pg_isready -q -h 127.0.0.1 -p $PG_PORT; then
  as_postgres "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null && echo "postgres stopped"
fi
