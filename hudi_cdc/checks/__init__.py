"""Checks of a table's settings and of the services it reads, and the preflight every ingest runs first.

- :mod:`hudi_cdc.checks.kit`: what a check returns, the report, the context the checks share,
  and what a Debezium envelope needs.
- One module per area, each importing the kit and nothing of the others:
  :mod:`~hudi_cdc.checks.environment` (Java, the jars), :mod:`~hudi_cdc.checks.target` (the Hudi
  table's path, settings and checkpoint), :mod:`~hudi_cdc.checks.files` (the files source),
  :mod:`~hudi_cdc.checks.kafka` (the topic and the schema registry), :mod:`~hudi_cdc.checks.formats`
  (a topic's JSON messages), :mod:`~hudi_cdc.checks.connect` (Kafka Connect and the Debezium
  connector), :mod:`~hudi_cdc.checks.postgres` (the source database's slot, publication and table),
  :mod:`~hudi_cdc.checks.jdbc` (the relation, key and cursor index a JDBC source reads).
- :mod:`hudi_cdc.checks.validate`: which checks run for a table's settings and in what order,
  :func:`~hudi_cdc.checks.validate.validate` and :func:`~hudi_cdc.checks.validate.preflight`.

They sit below the orchestrator, which runs the preflight; ``hudi-cdc validate``
(:mod:`hudi_cdc.ops.validate`) is the operator command over them.
"""
