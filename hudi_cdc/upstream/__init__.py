"""Upstream of the Hudi table: the source database, its Debezium connector, and the comparison of the two.

- :mod:`hudi_cdc.upstream.database`: connections to the source database, with secrets resolved when used.
- :mod:`hudi_cdc.upstream.connect`: Kafka Connect's REST API (connector and task states, restarts).
- :mod:`hudi_cdc.upstream.canonical`: one canonical text per value, in SQL and in Spark, so both sides hash alike.
- :mod:`hudi_cdc.upstream.compare`: the key-range hash comparison ``verify`` and JDBC delete reconciliation share.
"""
