"""Checks of a table's settings and of the services it reads, and the preflight every ingest runs first.

- :mod:`hudi_cdc.checks.kit`: what a check returns, the report, the context the checks share.
- :mod:`hudi_cdc.checks.validate`: the checks by area (environment, target, files, Kafka and the
  registry, Connect, the source database), their order, :func:`~hudi_cdc.checks.validate.validate`
  and :func:`~hudi_cdc.checks.validate.preflight`.
- :mod:`hudi_cdc.checks.formats`: what a Kafka topic's JSON messages are.
- :mod:`hudi_cdc.checks.jdbc`: the relation, key and cursor index a JDBC source reads.

They sit below the orchestrator, which runs the preflight; ``hudi-cdc validate``
(:mod:`hudi_cdc.ops.validate`) is the operator command over them.
"""
