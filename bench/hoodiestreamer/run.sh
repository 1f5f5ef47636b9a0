#!/usr/bin/env bash
# One round (not --continuous) of Hudi's own HoodieStreamer with PostgresDebeziumSource, for the
# side-by-side benchmark with hudi-cdc. Settings come from the environment; any arguments are passed
# on to HoodieStreamer (e.g. --hoodie-conf k=v, --disable-compaction). Prints the wall time.
#
#   TABLE_TYPE=MERGE_ON_READ TARGET=/tmp/hs/mor bench/hoodiestreamer/run.sh
#
# HUDI=1.2.0 (default) needs `mvn -f jars/hoodiestreamer/pom.xml ...` to have worked, which it
# cannot on this workplace's Maven mirror (no 1.x hudi-utilities there). HUDI=0.14.0 is the fallback
# that does run here: see jars/hoodiestreamer/hudi-0.14-fallback/pom.xml.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

HUDI=${HUDI:-1.2.0}
# Debezium's delete tombstones make DebeziumSource throw a NullPointerException; feed it the
# tombstone-free copy bench/run.py makes (strip_tombstones, prefix "hoodiestreamer.").
TOPIC=${TOPIC:-hoodiestreamer.dbserver1.inventory.customers}
TABLE_TYPE=${TABLE_TYPE:-COPY_ON_WRITE}
TARGET=${TARGET:-/tmp/hs/cow}
TABLE_NAME=${TABLE_NAME:-customers}
RECORD_KEY=${RECORD_KEY:-id}
SOURCE_LIMIT=${SOURCE_LIMIT:-10000000}
BOOTSTRAP=${BOOTSTRAP:-127.0.0.1:59092}
REGISTRY=${REGISTRY:-http://127.0.0.1:58080/apis/ccompat/v7}
# the copy carries the original topic's schema ids, so the subject is the original topic's
REGISTRY_URL=${REGISTRY_URL:-$REGISTRY/subjects/${TOPIC#hoodiestreamer.}-value/versions/latest}
MASTER=${MASTER:-local[2]}
DRIVER_MEMORY=${DRIVER_MEMORY:-2g}
LOG=${LOG:-$TARGET.log}

conf=(
  --hoodie-conf "hoodie.streamer.source.kafka.topic=$TOPIC"
  --hoodie-conf "bootstrap.servers=$BOOTSTRAP"
  # Hudi's default is LATEST: a new table would skip everything already in the topic
  --hoodie-conf auto.offset.reset=earliest
  --hoodie-conf "hoodie.datasource.write.recordkey.field=$RECORD_KEY"
  --hoodie-conf hoodie.datasource.write.partitionpath.field=
  --hoodie-conf hoodie.datasource.write.keygenerator.class=org.apache.hudi.keygen.NonpartitionedKeyGenerator
  # DebeziumSource reads this itself to build the Spark schema of the Envelope. No
  # --schemaprovider-class: with SchemaRegistryProvider the *target* schema becomes the Envelope
  # and every flattened row fails ("null value for (non-nullable) Source at Envelope.source").
  --hoodie-conf "hoodie.streamer.schemaprovider.registry.url=$REGISTRY_URL"
)

case $HUDI in
  1.2.0)
    J=$REPO/.jars/hoodiestreamer
    # pin the venv's Spark 3.5.7: .venv/bin/spark-submit alone resolves SPARK_HOME through
    # whichever python3 is first on PATH, which may hold another pyspark
    export SPARK_HOME=${SPARK_HOME:-$("$REPO/.venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}
    SPARK_SUBMIT=$SPARK_HOME/bin/spark-submit
    APP_JAR=$J/hudi-utilities-slim-bundle_2.12-1.2.0.jar
    JARS=$J/hudi-spark3.5-bundle_2.12-1.2.0.jar
    DESERIALIZER=${DESERIALIZER:-confluent}
    ;;
  0.14.0)
    J=$REPO/.jars/hoodiestreamer/hudi-0.14
    # pip install --no-deps --target .jars/hoodiestreamer/pyspark-3.4.4 pyspark==3.4.4
    export SPARK_HOME=${SPARK34_HOME:-$REPO/.jars/hoodiestreamer/pyspark-3.4.4/pyspark}
    SPARK_SUBMIT=$SPARK_HOME/bin/spark-submit
    APP_JAR=$J/hudi-utilities-relocated_2.12-0.14.0.jar
    JARS=$(ls "$J"/*.jar | grep -v relocated | paste -sd,)
    DESERIALIZER=${DESERIALIZER:-apicurio}     # the thin 0.14 jar has no Confluent classes
    # 0.14.0 reads this key with no default and fails without it ("Property ... not found")
    conf+=(--hoodie-conf hoodie.streamer.schemaprovider.registry.schemaconverter=)
    ;;
  *) echo "HUDI must be 1.2.0 or 0.14.0" >&2; exit 2 ;;
esac

case $DESERIALIZER in
  confluent)  # the registry is Confluent-compatible, and the ids in the messages are its ids
    conf+=(--hoodie-conf hoodie.streamer.source.kafka.value.deserializer.class=io.confluent.kafka.serializers.KafkaAvroDeserializer
           --hoodie-conf "schema.registry.url=$REGISTRY") ;;
  apicurio)   # Apicurio 3.0.9 serde from the stack; Spark already has avro, jackson, netty, commons
    A=${APICURIO_JARS:-$REPO/.stack/plugins/apicurio-converter}
    JARS=$JARS,$(ls "$A"/*.jar | grep -v -E '/(avro|netty|jackson|commons)-[^/]*$' | paste -sd,)
    conf+=(--hoodie-conf hoodie.streamer.source.kafka.value.deserializer.class=io.apicurio.registry.serde.avro.AvroKafkaDeserializer
           --hoodie-conf "apicurio.registry.url=${REGISTRY%/apis/*}/apis/registry/v3"
           --hoodie-conf apicurio.registry.id-handler=io.apicurio.registry.serde.Default4ByteIdHandler
           --hoodie-conf apicurio.registry.use-id=contentId
           --hoodie-conf apicurio.registry.headers.enabled=false) ;;
  *) echo "DESERIALIZER must be confluent or apicurio" >&2; exit 2 ;;
esac

[ -f "$APP_JAR" ] || { echo "missing $APP_JAR: fetch the jars first (see the comment at the top)" >&2; exit 2; }
mkdir -p "$(dirname "$TARGET")"
start=$(date +%s.%N)
set +e
setsid "$SPARK_SUBMIT" --master "$MASTER" --driver-memory "$DRIVER_MEMORY" \
  --conf spark.serializer=org.apache.spark.serializer.KryoSerializer \
  --conf spark.ui.enabled=false \
  --conf "spark.driver.extraJavaOptions=-Djol.skipDynamicAttach=true -Djol.skipInstallAttach=true" \
  --jars "$JARS" \
  --class org.apache.hudi.utilities.streamer.HoodieStreamer "$APP_JAR" \
  --table-type "$TABLE_TYPE" --op UPSERT \
  --target-base-path "$TARGET" --target-table "$TABLE_NAME" \
  --source-class org.apache.hudi.utilities.sources.debezium.PostgresDebeziumSource \
  --payload-class org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload \
  --source-ordering-field _event_lsn \
  --source-limit "$SOURCE_LIMIT" \
  "${conf[@]}" "$@" >"$LOG" 2>&1 &
pid=$!
# Apicurio's serde leaves non-daemon vert.x threads behind, so the JVM never exits on its own
# (seen with 0.14.0): once HoodieStreamer's main has stopped Spark, give it a moment, then end it.
end=
while kill -0 "$pid" 2>/dev/null; do
  if grep -q 'Successfully stopped SparkContext' "$LOG"; then
    end=$(date +%s.%N); sleep 3; kill -- -"$pid" 2>/dev/null; break
  fi
  sleep 0.2
done
wait "$pid"; rc=$?
end=${end:-$(date +%s.%N)}
set -e
if grep -q 'Exception in thread "main"' "$LOG"; then
  grep -m1 -A3 'Exception in thread "main"' "$LOG" >&2; rc=1
elif grep -q 'Successfully stopped SparkContext' "$LOG"; then
  rc=0
fi
printf 'HUDI=%s %s %s: rc=%s wall=%.1fs log=%s\n' "$HUDI" "$TABLE_TYPE" "$TARGET" "$rc" "$(awk -v a="$start" -v b="$end" 'BEGIN{print b-a}')" "$LOG"
exit "$rc"
