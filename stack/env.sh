# Settings of the local CDC stack, sourced by the other stack scripts.
# State (jars, data, logs, pids) lives in $STACK, by default .stack/ in the checkout.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export REPO=$(dirname "$HERE")
export STACK=${HUDI_CDC_STACK_DIR:-$REPO/.stack}
export PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PG_PORT=55432
export MARIADB_PORT=53306
export KAFKA_PORT=${HUDI_CDC_KAFKA_PORT:-59092}                # broker listener, open
export KAFKA_CTRL_PORT=${HUDI_CDC_KAFKA_CTRL_PORT:-59093}      # KRaft controller listener
export KAFKA_SASL_PORT=${HUDI_CDC_KAFKA_SASL_PORT:-59094}      # broker listener, SASL_SSL (SCRAM-SHA-512 over TLS)
export KAFKA_SASL_USER=hudicdc   # its user; password and CA in $STACK/kafka/tls (stack/tls.sh)
export APICURIO_PORT=${HUDI_CDC_APICURIO_PORT:-58080}          # open (Debezium's converter)
export APICURIO_AUTH_PORT=${HUDI_CDC_APICURIO_AUTH_PORT:-58081} # the same registry asking for a login (HTTP basic)
export CONNECT_PORT=58083        # Connect REST
export METASTORE_PORT=59083      # Hive metastore thrift (listens on all interfaces: HMS 3.1.3 has no bind host)
# SeaweedFS (`weed mini`: master, volume, filer and S3 gateway in one process) on 127.0.0.1: the S3 endpoint
# s3a:// tables are tested against, and its inner services' ports (each gRPC port beside its HTTP one).
export S3_PORT=${HUDI_CDC_S3_PORT:-58333}
export S3_ENDPOINT=http://127.0.0.1:$S3_PORT
export SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6   # the Go module proxy's (a commit of 2026-11-09, weed 4.53)
export JAVA=${JAVA:-java}

# The databases run as their own users (postgres, mysql), who cannot enter a checkout under a private
# directory (root's home, mode 0700). Their folders are .stack/pg and .stack/mariadb, or, when setup.sh
# found the checkout out of those users' reach, links from there to a per-checkout folder under
# $HUDI_CDC_STACK_DB_ROOT (stack/dbdirs.sh). Paths handed to those users are the links' targets.
db_dir() { if [ -L "$STACK/$1" ]; then readlink -m "$STACK/$1"; else echo "$STACK/$1"; fi; }
db_paths() { PG_DIR=$(db_dir pg); MARIADB_DIR=$(db_dir mariadb); export PG_DIR MARIADB_DIR PGDATA=$PG_DIR/data; }
db_paths
# Runs a command as the postgres user, from its own folder: it may not be able to enter the caller's.
as_postgres() { (cd "$PG_DIR" && su -s /bin/sh postgres -c 'exec "$@"' -- sh "$@"); }
