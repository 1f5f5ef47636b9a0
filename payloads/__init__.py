"""Merge policies: hudi-cdc's equivalents of Hudi's Debezium payload classes.

A policy knows, for one source flavor, how change events are ordered, what a
delete is and which placeholder means "unchanged"; it turns one flattened batch
into what the sink must write. It never does I/O of its own: state it needs from
the table (stored rows for TOAST, delete tombstones) comes in through
:class:`StoredState`.
"""

from payloads.base import (
    ARRIVAL_COLUMN,
    DELETED_COLUMN,
    ORDER_COLUMN,
    ChangeCounts,
    MergePolicy,
    PlanCounts,
    StoredState,
    WritePlan,
)
from payloads.jdbc import JdbcPolicy
from payloads.mysql import MySqlPolicy
from payloads.oracle import OraclePolicy
from payloads.postgres import PostgresPolicy
from payloads.sqlserver import SqlServerPolicy

__all__ = [
    "ARRIVAL_COLUMN",
    "ORDER_COLUMN",
    "DELETED_COLUMN",
    "ChangeCounts",
    "JdbcPolicy",
    "MergePolicy",
    "MySqlPolicy",
    "OraclePolicy",
    "PlanCounts",
    "PostgresPolicy",
    "SqlServerPolicy",
    "StoredState",
    "WritePlan",
    "policy_for",
]


def policy_for(flavor: str, **options: object) -> MergePolicy:
    """The policy of a source flavor (``postgres``, ``mysql``, ``sqlserver`` or ``oracle``)."""
    policies = {"postgres": PostgresPolicy, "mysql": MySqlPolicy, "sqlserver": SqlServerPolicy, "oracle": OraclePolicy}
    try:
        cls = policies[flavor]
    except KeyError:
        raise ValueError(f"unknown flavor {flavor!r}; known: {', '.join(policies)}") from None
    return cls(**options)  # type: ignore[arg-type, abstract]
