#!/bin/bash
# Trino 476 with only its Hudi connector, reading the tables hudi-cdc syncs to the stack's Hive metastore
# (docs/catalog.md#reading-them-from-trino). Not part of `make stack-up`: 783 MiB to fetch, 20-60 s to start, ~0.5 GiB of memory.
#   stack/trino.sh start    fetch (Maven Central, jars/trino/pom.xml) and unpack once, write the config, start, wait
#   stack/trino.sh stop     stop the server started by `start` (by its pid)
#   stack/trino.sh status   exit 0 when the server answers and has finished starting
# Settings (environment): TRINO_PORT (58090), TRINO_HMS_URI (thrift://127.0.0.1:59083), JAVA25_HOME (else the
# first /usr/lib/jvm/*25* whose `release` says Java 25), HUDI_CDC_STACK_DIR (.stack). State in $STACK/trino.
set -euo pipefail
. "$(dirname "$0")/env.sh"
TRINO_VERSION=476
PORT=${TRINO_PORT:-58090}
HMS_URI=${TRINO_HMS_URI:-thrift://127.0.0.1:59083}
DIR=$STACK/trino
SERVER=$DIR/trino-server-$TRINO_VERSION
PIDF=$DIR/trino.pid
CONF=$REPO/stack/conf/trino
alive() { [ -f "$PIDF" ] && kill -0 "$(cat "$PIDF")" 2>/dev/null; }
ready() { curl -sf "http://127.0.0.1:$PORT/v1/info" | grep -q '"starting":false'; }
el() { python3 -c "import time;print(f'{time.time()-$1:.1f}s')"; }

java25() { # Trino 476 needs Java 24 or newer; the machine image has Temurin 25 beside the default Java 17
  local home
  for home in ${JAVA25_HOME:-} /usr/lib/jvm/*25*; do
    [ -n "$home" ] && [ -x "$home/bin/java" ] && grep -q '^JAVA_VERSION="25' "$home/release" 2>/dev/null && { echo "$home"; return 0; }
  done
  echo "no Java 25 found: set JAVA25_HOME to a Java 25 JDK (tried ${JAVA25_HOME:-JAVA25_HOME unset} and /usr/lib/jvm/*25*)" >&2
  return 1
}

install() { # once: the server tarball and the CLI from Maven Central, unpacked whole, then all plugins but hudi removed
  [ -x "$SERVER/bin/launcher" ] && [ -f "$DIR/trino-cli.jar" ] && return 0
  local t0; t0=$(date +%s.%N)
  mkdir -p "$DIR/dist"
  mvn -q -B -f "$REPO/jars/trino/pom.xml" dependency:copy@fetch-trino -Dtrino.dir="$DIR/dist"
  echo "trino: fetched in $(el "$t0")"
  # Whole: the plugin folders hard-link each other's jars, so extracting only plugin/hudi fails.
  rm -rf "$SERVER.partial" && mkdir -p "$SERVER.partial"
  tar xzf "$DIR/dist/trino-server-$TRINO_VERSION.tar.gz" -C "$SERVER.partial" --strip-components=1
  find "$SERVER.partial/plugin" -mindepth 1 -maxdepth 1 ! -name hudi -exec rm -rf {} +
  rm -rf "$SERVER" && mv "$SERVER.partial" "$SERVER"
  mv "$DIR/dist/trino-cli.jar" "$DIR/trino-cli.jar"
  rm -rf "$DIR/dist"  # the tarball stays in Maven's local repository
  echo "trino: unpacked in $(el "$t0") total, $(du -sm "$SERVER" | cut -f1) MB on disk"
}

configure() {
  mkdir -p "$DIR/etc/catalog" "$DIR/data"
  local subst="s#@PORT@#$PORT#g; s#@DATA@#$DIR/data#g; s#@HMS_URI@#$HMS_URI#g"
  sed -e "$subst" "$CONF/node.properties.in" > "$DIR/etc/node.properties"
  sed -e "$subst" "$CONF/config.properties.in" > "$DIR/etc/config.properties"
  sed -e "$subst" "$CONF/catalog/hudi.properties.in" > "$DIR/etc/catalog/hudi.properties"
  cp "$CONF/jvm.config" "$CONF/log.properties" "$DIR/etc/"
}

start() {
  if alive && ready; then echo "trino already up on 127.0.0.1:$PORT"; return 0; fi
  local jdk; jdk=$(java25)
  install
  configure
  if ! alive; then
    if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then echo "port $PORT is taken by another process: set TRINO_PORT" >&2; return 1; fi
    (cd "$DIR"; setsid nohup "$SERVER/bin/launcher" run --etc-dir="$DIR/etc" --data-dir="$DIR/data" --jvm-dir="$jdk" \
       > trino.log 2>&1 < /dev/null & echo $! > trino.pid)
  fi
  local t0; t0=$(date +%s.%N)
  for _ in $(seq 1 240); do
    if ready; then echo "trino ready on 127.0.0.1:$PORT in $(el "$t0") (pid $(cat "$PIDF"))"; return 0; fi
    alive || { echo "trino died, see $DIR/trino.log" >&2; tail -20 "$DIR/trino.log" >&2; return 1; }
    sleep 1
  done
  echo "trino not ready after 240s, see $DIR/trino.log" >&2; return 1
}

stop() {
  if alive; then
    local p; p=$(cat "$PIDF"); kill -TERM "$p"
    for _ in $(seq 1 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$p" 2>/dev/null && { echo "trino did not stop, sending KILL"; kill -KILL "$p"; }
    echo "trino (pid $p) stopped"
  fi
  rm -f "$PIDF"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if alive && ready; then echo "trino up on 127.0.0.1:$PORT (pid $(cat "$PIDF"))"; else echo "trino down"; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
