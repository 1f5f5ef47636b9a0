"""Settings and report look-ups the checks' tests share (and the stack's validate tests in ``tests/ops``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hudi_cdc.checks.kit import ValidationReport
from hudi_cdc.config import IngestConfig, load_config


def files_config(source: Path, base: Path | str, **more: Any) -> IngestConfig:
    options: dict[str, Any] = {"record_key_fields": "id", "target_table": "t_cow", **more}
    return load_config(source="files", source_path=str(source), target_base_path=str(base), env={}, **options)


def status(report: ValidationReport, name: str) -> tuple[str, str]:
    check = report.check(name)
    return check.status, check.detail
