"""Test and demo helpers: Debezium envelopes without a database, and the local stack's Postgres.

``envelopes`` needs nothing but fastavro. ``workload`` is the sample
databases' change workload, which ``postgres`` (with the table comparison;
``psycopg``) and ``mariadb`` (``pymysql``) run in their own dialect. ``kafka``
(framed Avro messages and registry schemas) needs a broker. Import them
explicitly.
"""

from hudi_cdc.testing.envelopes import (
    envelope_schema,
    mysql_event,
    oracle_event,
    pg_event,
    sqlserver_event,
    write_events,
)

__all__ = ["envelope_schema", "pg_event", "mysql_event", "sqlserver_event", "oracle_event", "write_events"]
