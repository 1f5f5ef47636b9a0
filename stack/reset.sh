#!/bin/bash
# Wipe the stack's state (Postgres cluster, MariaDB data, Kafka log, Connect offsets, SeaweedFS's objects, logs); downloaded
# jars and the built SeaweedFS stay.
. "$(dirname "$0")/env.sh"
. "$(dirname "$0")/dbdirs.sh"
"$(dirname "$0")/stop.sh"
cd "$STACK" 2>/dev/null || exit 0
rm -rf pg/data pg/run mariadb/data mariadb/run apicurio/db kafka/data kafka/cluster.id connect/data/* kafka/kafka.log apicurio/apicurio.log connect/connect.log connect/supervisor.log
# The metastore database goes with pg/data; its warehouse folder and logs:
rm -rf metastore/warehouse metastore/metastore.log* metastore/metastore.out metastore/schematool.log
# SeaweedFS's objects and logs (its built binary stays):
rm -rf seaweedfs/data seaweedfs/weed.log*
# The databases' folder outside the checkout, if setup.sh made one: setup.sh chooses again.
drop_db_home
