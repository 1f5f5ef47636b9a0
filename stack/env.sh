# Settings of the local CDC stack, sourced by the other stack scripts.
# State (jars, data, logs, pids) lives in $STACK, by default .stack/ in the checkout.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export REPO=$(dirname "$HERE")
export STACK=${HUDI_CDC_STACK_DIR:-$REPO/.stack}
export PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PGDATA=$STACK/pg/data
export PG_PORT=55432
export MARIADB_PORT=53306
export KAFKA_PORT=59092          # broker listener
export KAFKA_CTRL_PORT=59093     # KRaft controller listener
export APICURIO_PORT=58080
export CONNECT_PORT=58083        # Connect REST
export JAVA=${JAVA:-java}
