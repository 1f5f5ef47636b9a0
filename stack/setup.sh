#!/bin/bash
# One-time, idempotent: jars from Maven Central, PostgreSQL from Debian, SeaweedFS from the Go module proxy, a
# Postgres cluster and Kafka storage.
set -euo pipefail
. "$(dirname "$0")/env.sh"
. "$(dirname "$0")/dbdirs.sh"
mkdir -p "$STACK"/{kafka,connect/data,plugins,apicurio}
cd "$STACK"
render() { sed -e "s|@STACK@|$STACK|g" -e "s|@PG_DIR@|$PG_DIR|g" -e "s|@MARIADB_DIR@|$MARIADB_DIR|g" \
  -e "s|@KAFKA_PORT@|$KAFKA_PORT|g" -e "s|@KAFKA_CTRL_PORT@|$KAFKA_CTRL_PORT|g" -e "s|@KAFKA_SASL_PORT@|$KAFKA_SASL_PORT|g" \
  "$REPO/stack/conf/$1" > "$2"; }

# Debian's packages; their services are not started here (the stack runs its own, as their users).
need=(); [ -x "$PGBIN/initdb" ] || need+=(postgresql-15); [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
if [ ${#need[@]} -gt 0 ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"; fi
# Their folders, where their users can enter them (stack/dbdirs.sh): needs the users the packages made.
place_db_dir pg postgres
place_db_dir mariadb mysql
db_paths
mvn_copy() { mvn -q -B -f "$REPO/jars/$1/pom.xml" dependency:copy-dependencies -DincludeScope=runtime "${@:2}"; }
[ -d kafka/lib ] || mvn_copy kafka -DoutputDirectory="$STACK/kafka/lib"
[ -d connect/lib ] || mvn_copy connect -DoutputDirectory="$STACK/connect/lib"
[ -d plugins/debezium-connector-postgres ] && [ -d plugins/debezium-connector-mariadb ] ||
  mvn -q -B -f "$REPO/jars/debezium/pom.xml" dependency:unpack@unpack-plugin -Dstack.plugins="$STACK/plugins"
if [ ! -d plugins/apicurio-converter ]; then
  "$REPO/stack/fetch-apicurio.sh" "$STACK/plugins/apicurio-converter.partial"
  mvn_copy apicurio -DoutputDirectory="$STACK/plugins/apicurio-converter.partial" -DexcludeGroupIds=org.apache.kafka,org.slf4j
  mv plugins/apicurio-converter.partial plugins/apicurio-converter
fi
# Apicurio Registry 3.0.9 server: the last 3.x that runs on Java 17 (3.3 needs 21).
if [ ! -f apicurio/dist/apicurio-registry-app-3.0.9-runner.jar ]; then
  u=https://repo.maven.apache.org/maven2/io/apicurio/apicurio-registry-app/3.0.9/apicurio-registry-app-3.0.9-all.tar.gz
  curl -sSf -o apicurio/app.tar.gz "$u"
  [ "$(curl -sSf "$u.sha1" | cut -c1-40)" = "$(sha1sum apicurio/app.tar.gz | cut -c1-40)" ] || { echo "sha1 mismatch: $u" >&2; exit 1; }
  mkdir -p apicurio/dist && tar xzf apicurio/app.tar.gz -C apicurio/dist && rm apicurio/app.tar.gz
fi
# Hive metastore 3.1.3 (jars/metastore/pom.xml): its runtime jars, and from its bin tarball the SQL that
# schematool runs (stack/start.sh creates the database and the schema: Postgres must be running for that).
if [ ! -d metastore/dist ]; then
  rm -rf metastore/dist.partial
  mvn -q -B -f "$REPO/jars/metastore/pom.xml" dependency:copy-dependencies@copy-lib dependency:unpack@unpack-home \
    -Dstack.metastore="$STACK/metastore/dist.partial"
  mv metastore/dist.partial metastore/dist
fi
# A dist made before the s3a jars joined the pom (s3a:// table locations): add them (copy-lib copies them all again).
[ -f metastore/dist/lib/hadoop-aws-3.1.0.jar ] ||
  mvn -q -B -f "$REPO/jars/metastore/pom.xml" dependency:copy-dependencies@copy-lib -Dstack.metastore="$STACK/metastore/dist"
mkdir -p metastore/conf metastore/warehouse
render metastore-site.xml.in metastore/conf/metastore-site.xml
sed -i -e "s|@PG_PORT@|$PG_PORT|g" -e "s|@METASTORE_PORT@|$METASTORE_PORT|g" -e "s|@S3_ENDPOINT@|$S3_ENDPOINT|g" \
  metastore/conf/metastore-site.xml
cp metastore/dist/apache-hive-metastore-3.1.3-bin/conf/metastore-log4j2.properties metastore/conf/
render kafka-server.properties kafka/server.properties
# The secured listener's CA, broker key store and the SCRAM user's password (stack/tls.sh), made here by openssl;
# the registry's login (user hudicdc, a random password) for its basic-auth port.
"$REPO/stack/tls.sh" "$STACK/kafka/tls"
mkdir -p apicurio/auth
if [ ! -s apicurio/auth/hudicdc.password ]; then
  (umask 077; openssl rand -hex 16 > apicurio/auth/hudicdc.password)
fi
(umask 077; echo "hudicdc:$(cat apicurio/auth/hudicdc.password)" > apicurio/auth/users)
render connect-standalone.properties connect/connect-standalone.properties
cp "$REPO/stack/conf/inventory-connector.properties" "$REPO/stack/conf/inventory-mariadb-connector.properties" connect/
cp "$REPO/stack/conf/log4j2.properties" "$REPO/stack/conf/log4j2-quiet.properties" kafka/
cp "$REPO/stack/conf/log4j2.properties" connect/

# SeaweedFS, the S3 server s3a:// tables are tested against: built from the Go module proxy (its go.mod has a
# replace directive, so `go install pkg@version` refuses it: built inside the downloaded module instead).
# Go's module and build caches under $HOME make a rebuild a link step; the first build takes about 8 CPU minutes.
mkdir -p seaweedfs
if [ "$(cat seaweedfs/weed.version 2>/dev/null)" != "$SEAWEEDFS_VERSION" ] || [ ! -x seaweedfs/weed ]; then
  # Go's own install folder too: CI and cron run with a bare PATH (/usr/local/bin:/usr/bin:/bin).
  export PATH="$PATH:/usr/local/go/bin"
  command -v go >/dev/null || { echo "go is required to build SeaweedFS (the stack's S3 server): install Go 1.26+" >&2; exit 1; }
  # The installed Go, never a toolchain download (GOTOOLCHAIN=auto would fetch one a go.mod asks for).
  export GOPATH=${GOPATH:-$HOME/go} GOCACHE=${GOCACHE:-$HOME/.cache/go-build} GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
  src=$(cd /tmp && go mod download -json "github.com/seaweedfs/seaweedfs@$SEAWEEDFS_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Dir", ""))')
  [ -d "$src/weed" ] || { echo "go mod download gave no SeaweedFS source (got '$src')" >&2; exit 1; }
  (cd "$src" && go build -o "$STACK/seaweedfs/weed.partial" ./weed)
  mv seaweedfs/weed.partial seaweedfs/weed && echo "$SEAWEEDFS_VERSION" > seaweedfs/weed.version
fi
cp "$REPO/stack/conf/seaweedfs-s3.json" seaweedfs/s3.json

# PostgreSQL refuses to run as root: the cluster belongs to the 'postgres' user.
if [ ! -f "$PGDATA/PG_VERSION" ]; then
  mkdir -p pg/run && chown -R postgres:postgres pg/
  as_postgres "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 > pg/initdb.log
  render postgresql.conf pg/postgresql.stack.conf
  cat pg/postgresql.stack.conf >> "$PGDATA/postgresql.conf"
  echo 'host    replication     all             127.0.0.1/32            scram-sha-256' >> "$PGDATA/pg_hba.conf"
  as_postgres "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PG_DIR/postgres.log" -w -t 60 start > /dev/null
  psql -h "$PG_DIR/run" -p $PG_PORT -U postgres -v ON_ERROR_STOP=1 -q -f "$REPO/stack/conf/init.sql"
  as_postgres "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop > /dev/null
fi
# MariaDB refuses to run as root too: its data belongs to the 'mysql' user; root logs in by its socket.
render mariadb.cnf mariadb/my.cnf
if [ ! -d mariadb/data/mysql ]; then
  mkdir -p mariadb/data mariadb/run && chown -R mysql:mysql mariadb/
  (cd "$MARIADB_DIR" && mariadb-install-db --defaults-file="$MARIADB_DIR/my.cnf" --user=mysql --skip-test-db) > mariadb/install.log 2>&1
  (cd "$MARIADB_DIR" && exec /usr/sbin/mariadbd --defaults-file="$MARIADB_DIR/my.cnf" --user=mysql --skip-networking) > /dev/null 2>&1 &
  for _ in $(seq 1 60); do mariadb --defaults-file="$MARIADB_DIR/my.cnf" -uroot -e 'select 1' >/dev/null 2>&1 && break; sleep 0.5; done
  mariadb --defaults-file="$MARIADB_DIR/my.cnf" -uroot < "$REPO/stack/conf/init-mariadb.sql"
  mariadb-admin --defaults-file="$MARIADB_DIR/my.cnf" -uroot shutdown
  wait
fi
if [ ! -f kafka/data/meta.properties ]; then
  [ -f kafka/cluster.id ] || $JAVA -cp 'kafka/lib/*' kafka.tools.StorageTool random-uuid > kafka/cluster.id
  $JAVA -Xmx256m -Dlog4j2.configurationFile="$STACK/kafka/log4j2-quiet.properties" -cp 'kafka/lib/*' \
    kafka.tools.StorageTool format -t "$(cat kafka/cluster.id)" -c kafka/server.properties > /dev/null
fi
echo "stack set up in $STACK"
