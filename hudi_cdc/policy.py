"""The merge policy a table's settings choose: beside the config it reads, below everything that merges."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hudi_cdc.config import FLAVORS_WITH_PLACEHOLDERS
from payloads import JdbcPolicy, policy_for

if TYPE_CHECKING:
    from hudi_cdc.config import IngestConfig
    from payloads.base import MergePolicy

__all__ = ["merge_policy"]


def merge_policy(config: IngestConfig) -> MergePolicy:
    """The merge policy of a table's settings (its flavor, placeholder and TRUNCATE behaviour)."""
    if config.source == "jdbc":  # rows read by a cursor, whatever the database
        return JdbcPolicy()
    return policy_for(
        config.flavor,
        toast_placeholder=config.toast_placeholder if config.flavor in FLAVORS_WITH_PLACEHOLDERS else None,
        apply_truncates=config.truncate_behavior == "apply",
    )
