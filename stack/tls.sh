#!/bin/bash
# The stack's secured-Kafka material, made once in DIR (stack/setup.sh: $STACK/kafka/tls) by openssl, nothing downloaded:
#   ca.pem (the CA clients trust: kafka_ssl_ca_file), ca.key; broker-keystore.pem (the broker's PKCS#8 key and its
#   certificate for 127.0.0.1/localhost, signed by the CA: Kafka's PEM key store); hudicdc.password (the SCRAM user's
#   password, random, mode 0600: kafka_sasl_password_file). Idempotent: what exists is kept.
set -euo pipefail
DIR=${1:?usage: tls.sh DIR}
mkdir -p "$DIR" && cd "$DIR"
ossl() { openssl "$@" >/dev/null 2>&1 || { echo "openssl $1 failed in $DIR" >&2; exit 1; }; }
if [ ! -f ca.pem ] || [ ! -f ca.key ]; then
  ossl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=hudi-cdc stack CA" -keyout ca.key -out ca.pem
  rm -f broker-keystore.pem  # signed by the CA it replaces
fi
if [ ! -f broker-keystore.pem ]; then
  echo "subjectAltName=IP:127.0.0.1,DNS:localhost" > san.cnf
  ossl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout broker.key -out broker.csr
  ossl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 -extfile san.cnf -out broker.pem
  ossl pkcs8 -topk8 -nocrypt -in broker.key -out broker.pk8
  cat broker.pk8 broker.pem > broker-keystore.pem.partial && mv broker-keystore.pem.partial broker-keystore.pem
  rm -f broker.key broker.csr broker.pk8 san.cnf
fi
if [ ! -s hudicdc.password ]; then
  (umask 077; openssl rand -hex 16 > hudicdc.password.partial) && mv hudicdc.password.partial hudicdc.password
fi
chmod 600 ca.key broker-keystore.pem hudicdc.password
