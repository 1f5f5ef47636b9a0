#!/bin/bash
# Start Postgres, MariaDB -> the Hive metastore -> SeaweedFS (S3) -> Kafka (KRaft; an open and a SASL_SSL listener) ->
# Apicurio (open, and behind a login on the next port) -> Kafka Connect (standalone +
# Debezium) -> the Connect supervisor, each with a readiness check.
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$STACK"
t0=$(date +%s.%N)
el() { python3 -c "import time;print(f'{time.time()-$1:.1f}s')"; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
wait_for() { # name timeout pidfile cmd...
  local name=$1 to=$2 pidf=$3; shift 3; local s=$(date +%s.%N)
  for _ in $(seq 1 "$to"); do
    if "$@" >/dev/null 2>&1; then echo "$name ready in $(el $s)"; return 0; fi
    if [ -n "$pidf" ] && ! alive "$pidf"; then echo "$name died, see its log" >&2; return 1; fi
    sleep 1
  done; echo "$name not ready after ${to}s" >&2; return 1; }

# 1. PostgreSQL (as user postgres)
if ! $PGBIN/pg_isready -q -h 127.0.0.1 -p $PG_PORT; then
  as_postgres "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PG_DIR/postgres.log" -w -t 60 start >/dev/null
fi
wait_for postgres 30 "" $PGBIN/pg_isready -q -h 127.0.0.1 -p $PG_PORT

# 1b. MariaDB (as user mysql), for the MariaDB connector
maria_ready() { mariadb-admin --defaults-file="$MARIADB_DIR/my.cnf" -uroot status; }
if ! maria_ready >/dev/null 2>&1; then
  (cd "$MARIADB_DIR" && exec setsid nohup /usr/sbin/mariadbd --defaults-file="$MARIADB_DIR/my.cnf" --user=mysql) > /dev/null 2>&1 < /dev/null &
fi
wait_for mariadb 60 "" maria_ready

# 1c. Hive metastore 3.1.3 on Postgres (database `metastore`, owner debezium; created as the postgres user,
#     since debezium may not create databases), its schema by schematool once (-info fails on an empty
#     database; DataNucleus' autoCreateAll would deadlock). It listens on all interfaces (no bind host in 3.1.3).
ms_cp="$STACK/metastore/conf:$STACK/metastore/dist/lib/*"
schematool() { METASTORE_HOME="$STACK/metastore/dist/apache-hive-metastore-3.1.3-bin" $JAVA -Xmx256m -XX:+UseSerialGC -cp "$ms_cp" \
  org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool -dbType postgres "$@"; }
ms_new=
if ! alive metastore/metastore.pid; then
  ms_new=1
  pg_su() { psql -h "$PG_DIR/run" -p $PG_PORT -U postgres -v ON_ERROR_STOP=1 -qtA -c "$1"; }
  [ "$(pg_su "select 1 from pg_database where datname = 'metastore'")" = 1 ] || pg_su "create database metastore owner debezium"
  schematool -info > metastore/schematool.log 2>&1 || schematool -initSchema >> metastore/schematool.log 2>&1 ||
    { echo "metastore schema init failed, see $STACK/metastore/schematool.log" >&2; exit 1; }
  mv -f metastore/metastore.log metastore/metastore.log.prev 2>/dev/null || true
  (cd metastore; setsid nohup $JAVA -Xmx512m -XX:+UseSerialGC -Dmetastore.log.dir="$STACK/metastore" -cp "$ms_cp" \
     org.apache.hadoop.hive.metastore.HiveMetaStore > metastore.out 2>&1 < /dev/null & echo $! > metastore.pid)
fi
# Its own line, not the port: another process on the port would pass for it (this one then dies: "Address in use").
# Only a metastore started now is checked by that line: log4j rolls metastore.log at midnight, so a running one's
# line may be in metastore.log.<date> (a restart of another service after midnight failed on it); its own start
# was checked then, and its pid file says it is still the same process.
ms_ready() { { [ -z "$ms_new" ] || grep -q 'Started the new metaserver on port' metastore/metastore.log; } &&
  (exec 3<>/dev/tcp/127.0.0.1/$METASTORE_PORT); }
wait_for metastore 60 metastore/metastore.pid ms_ready

# 1d. SeaweedFS (`weed mini`: master, volume server, filer and S3 gateway in one process) on 127.0.0.1, the S3
#     endpoint of s3a:// tables (docs/object-storage.md): one identity for the tests (stack/conf/seaweedfs-s3.json),
#     the bucket `hudi-cdc`, its inner services on the ports after S3_PORT, no telemetry, no WebDAV or catalogs.
s3_ready() { curl -sf -o /dev/null -I --aws-sigv4 aws:amz:us-east-1:s3 --user hudicdc-test:hudicdc-test-secret "$S3_ENDPOINT/hudi-cdc"; }
if ! alive seaweedfs/weed.pid; then
  mkdir -p seaweedfs/data
  mv -f seaweedfs/weed.log seaweedfs/weed.log.prev 2>/dev/null || true
  (cd seaweedfs; setsid nohup ./weed mini -dir="$STACK/seaweedfs/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
     -s3.port=$S3_PORT -s3.port.grpc=$((S3_PORT + 1)) -master.port=$((S3_PORT + 2)) -master.port.grpc=$((S3_PORT + 3)) \
     -volume.port=$((S3_PORT + 4)) -volume.port.grpc=$((S3_PORT + 5)) -filer.port=$((S3_PORT + 6)) \
     -filer.port.grpc=$((S3_PORT + 7)) -admin.port=$((S3_PORT + 8)) -admin.port.grpc=$((S3_PORT + 9)) \
     -admin.port.legacy=0 -admin.ui=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 \
     -master.telemetry=false -s3.config="$STACK/seaweedfs/s3.json" -bucket=hudi-cdc \
     > weed.log 2>&1 < /dev/null & echo $! > weed.pid)
fi
wait_for seaweedfs 60 seaweedfs/weed.pid s3_ready

# The venv's Python: the SCRAM user (2b), the registry's login proxy (3b), the Connect supervisor (5).
PY=${HUDI_CDC_PYTHON:-$REPO/.venv/bin/python}

# 2. Kafka broker+controller (KRaft)
kafka_new=
if ! alive kafka/kafka.pid; then
  kafka_new=1
  (cd kafka; setsid nohup $JAVA -Xms256m -Xmx512m -XX:+UseG1GC -Dlog4j2.configurationFile=$STACK/kafka/log4j2.properties \
     -cp "$STACK/kafka/lib/*" kafka.Kafka server.properties > kafka.log 2>&1 < /dev/null & echo $! > kafka.pid)
fi
wait_for kafka 60 kafka/kafka.pid grep -q 'Kafka Server started' kafka/kafka.log
# 2b. The secured listener's user (SCRAM-SHA-512, stack/tls.sh's password), made through the open listener once per
#     password: the marker, in the broker's data, goes with the data (stack/reset.sh) and names the password's hash.
#     Kafka's ConfigCommand would take the password on its command line or echo it in an error: librdkafka's admin
#     client, in the venv, reads it from its file instead.
# A stack set up before the listener existed (stack/setup.sh not run since) has neither its config nor its
# material: it starts without it, with a warning, rather than not at all (a service restart runs this script).
if grep -q '^listeners=.*SASL_SSL' kafka/server.properties && [ -s kafka/tls/hudicdc.password ]; then
  scram_mark=kafka/data/.scram-$KAFKA_SASL_USER
  scram_want=$(sha256sum kafka/tls/hudicdc.password | cut -c1-64)
  if [ "$(cat "$scram_mark" 2>/dev/null)" != "$scram_want" ]; then
    "$PY" - "127.0.0.1:$KAFKA_PORT" "$KAFKA_SASL_USER" kafka/tls/hudicdc.password > kafka/scram.log 2>&1 <<'PYEOF' ||
import sys
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
servers, user, path = sys.argv[1:]
with open(path) as f:
    password = f.read().strip().encode()
info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
admin = AdminClient({"bootstrap.servers": servers})
for future in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(user, info, password)]).values():
    future.result(timeout=30)
print(f"SCRAM-SHA-512 user {user} set")
PYEOF
      { echo "adding the SCRAM user failed, see $STACK/kafka/scram.log" >&2; exit 1; }
    echo "$scram_want" > "$scram_mark"
  fi
  sasl_up() { (exec 3<>/dev/tcp/127.0.0.1/$KAFKA_SASL_PORT); }
  if [ -n "$kafka_new" ] || sasl_up 2>/dev/null; then
    wait_for kafka-sasl-ssl 30 kafka/kafka.pid sasl_up
  else  # a broker started before its config had the listener: the rest of the stack still serves
    echo "warning: the running Kafka has no SASL_SSL listener on $KAFKA_SASL_PORT (started from an older config):" \
      "make stack-down && make stack-up adds it" >&2
  fi
else
  echo "warning: no SASL_SSL listener in $STACK/kafka/server.properties: stack/setup.sh (make stack-up) adds it" >&2
fi

# 3. Apicurio Registry 3.0.9, H2 in a file under .stack: schema ids must outlive a restart, since
#    Kafka keeps the messages that carry them (an in-memory registry would hand the ids out again).
if ! alive apicurio/apicurio.pid; then
  mkdir -p apicurio/db
  (cd apicurio; setsid nohup $JAVA -Xms128m -Xmx512m -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port=$APICURIO_PORT \
     -Dquarkus.http.access-log.enabled=false -Dapicurio.storage.kind=sql -Dapicurio.storage.sql.kind=h2 \
     -Dapicurio.datasource.url="${APICURIO_DB_URL:-jdbc:h2:file:$STACK/apicurio/db/registry}" \
     -jar dist/apicurio-registry-app-3.0.9-runner.jar > apicurio.log 2>&1 < /dev/null & echo $! > apicurio.pid)
fi
wait_for apicurio 90 apicurio/apicurio.pid curl -sf http://127.0.0.1:$APICURIO_PORT/health/ready

# 3b. The same registry asking for a login (HTTP basic; apicurio/auth/users, made by setup.sh) on the next port: a
#     proxy in front of it (hudi_cdc/testing/registry_proxy.py, stdlib only: run as a file, the package not imported;
#     Apicurio itself authenticates through OIDC only).
if [ -s apicurio/auth/users ]; then
  if ! alive apicurio/auth-proxy.pid; then
    (cd apicurio; setsid nohup "$PY" "$REPO/hudi_cdc/testing/registry_proxy.py" --listen 127.0.0.1:$APICURIO_AUTH_PORT \
       --upstream http://127.0.0.1:$APICURIO_PORT --users-file "$STACK/apicurio/auth/users" > auth-proxy.log 2>&1 < /dev/null &
     echo $! > auth-proxy.pid)
  fi
  # Ready when it refuses a request without a login (401) and passes one with it.
  auth_ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$APICURIO_AUTH_PORT/apis/ccompat/v7/subjects)" = 401 ] &&
    curl -sf -o /dev/null -u "hudicdc:$(cat apicurio/auth/hudicdc.password)" http://127.0.0.1:$APICURIO_AUTH_PORT/apis/ccompat/v7/subjects; }
  wait_for registry-auth 30 apicurio/auth-proxy.pid auth_ready
else
  echo "warning: no $STACK/apicurio/auth/users: stack/setup.sh (make stack-up) makes the registry's login" >&2
fi

# 4. Kafka Connect standalone with the Debezium connectors (Postgres, MariaDB)
if ! alive connect/connect.pid; then
  (cd connect; setsid nohup $JAVA -Xms128m -Xmx512m -XX:+UseG1GC -Dlog4j2.configurationFile=$STACK/connect/log4j2.properties \
     -cp "$STACK/connect/lib/*" org.apache.kafka.connect.cli.ConnectStandalone \
     connect-standalone.properties inventory-connector.properties inventory-mariadb-connector.properties > connect.log 2>&1 < /dev/null & echo $! > connect.pid)
fi
wait_for connect-rest 120 connect/connect.pid curl -sf http://127.0.0.1:$CONNECT_PORT/connectors

# 5. The supervisor: Connect never restarts a FAILED task (a registry outage fails the Debezium task for
#    good), so it polls Connect and restarts failed tasks with backoff (docs/setup-postgres.md). Started
#    before waiting for the task, which may be FAILED already when this script runs.
if alive connect/supervisor.pid; then :
elif [ -x "$PY" ]; then
  (cd connect; setsid nohup "$PY" -m hudi_cdc -v connect supervise --connect-url http://127.0.0.1:$CONNECT_PORT \
     --interval 5 --max-backoff 60 >> supervisor.log 2>&1 < /dev/null & echo $! > supervisor.pid)
  wait_for supervisor 30 connect/supervisor.pid grep -q 'supervising Kafka Connect' connect/supervisor.log
else
  echo "warning: no python at $PY (make install, or set HUDI_CDC_PYTHON): failed Connect tasks will not be restarted" >&2
fi
task_running() { curl -sf http://127.0.0.1:$CONNECT_PORT/connectors/$1/status | grep -q '"tasks":\[{"id":0,"state":"RUNNING"'; }
wait_for connect 120 connect/connect.pid task_running inventory-connector
wait_for connect-mariadb 120 connect/connect.pid task_running inventory-mariadb-connector
echo "stack up in $(el $t0)"
