#!/bin/bash
# Fetch the io.apicurio 3.0.9 jars straight from Maven Central (their parent pom is missing there,
# so Maven refuses to resolve them) and verify each against Central's .sha1.
set -euo pipefail
DEST=${1:?usage: fetch-apicurio.sh DEST_DIR}
mkdir -p "$DEST"
B=https://repo.maven.apache.org/maven2/io/apicurio
for a in apicurio-registry-utils-converter apicurio-registry-avro-serde-kafka apicurio-registry-serde-kafka-common \
         apicurio-registry-serde-common-avro apicurio-registry-serde-common apicurio-registry-schema-resolver apicurio-registry-common; do
  f=$a-3.0.9.jar
  curl -sSf -o "$DEST/$f" "$B/$a/3.0.9/$f"
  want=$(curl -sSf "$B/$a/3.0.9/$f.sha1" | cut -c1-40)
  got=$(sha1sum "$DEST/$f" | cut -c1-40)
  [ "$want" = "$got" ] || { echo "sha1 mismatch for $f" >&2; exit 1; }
done
