"""Operator commands: functions that return result objects; the CLI, the Python API and Airflow render or raise.

- :mod:`hudi_cdc.ops.verify`: compare a Hudi table with its source table.
- :mod:`hudi_cdc.ops.validate`: preflight checks before (and at) the first ingest.
- :mod:`hudi_cdc.ops.connect`: the state of Kafka Connect connectors, and a supervisor that restarts failed tasks.
"""
