"""``hudi-cdc validate``: preflight checks before the first ingest, and the cheap ones every ingest runs first.

The checks live in :mod:`hudi_cdc.checks`, below the orchestrator that runs the
preflight before its first round; this is the operator command's name for them.
"""

from __future__ import annotations

from hudi_cdc.checks.validate import Check, Status, ValidationReport, preflight, validate

__all__ = ["Check", "Status", "ValidationReport", "preflight", "validate"]
