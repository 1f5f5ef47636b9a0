"""One error base for hudi-cdc, split by layer and by kind.

Callers (the CLI, the continuous loop, an Airflow task) decide whether to retry
by class: :class:`TransientError` may succeed on retry, :class:`TerminalError`
will not until someone changes the input or the configuration.
"""

from __future__ import annotations

__all__ = [
    "HudiCdcError",
    "TransientError",
    "TerminalError",
    "ConfigError",
    "SourceError",
    "DecodeError",
    "MergeError",
    "SinkError",
    "CompactionError",
    "TerminalSinkError",
    "CheckpointError",
    "SchemaChangeError",
    "LeaseHeldError",
    "LeaseLostError",
    "retry_backoff_s",
]

MAX_BACKOFF_S = 60.0


class HudiCdcError(Exception):
    """Base of every error hudi-cdc raises on purpose."""

    transient: bool = False


class TransientError(HudiCdcError):
    """Something outside us failed in a way that a retry may fix."""

    transient = True


class TerminalError(HudiCdcError):
    """Input or configuration is wrong: retrying the same run fails the same way."""


class ConfigError(TerminalError):
    """A setting is missing, unknown or has a bad value."""


class SourceError(TerminalError):
    """The source cannot be planned or read (missing path, unreadable file)."""


class DecodeError(TerminalError):
    """A change event is malformed: not Avro, no ``op``, no position, null key."""


class MergeError(TerminalError):
    """A batch cannot be merged safely (for example a TOAST placeholder for an unseen key)."""


class SinkError(HudiCdcError):
    """Writing the Hudi table failed. Transient unless a subclass says otherwise."""

    transient = True


class CompactionError(SinkError):
    """MERGE_ON_READ compaction keeps failing: the data is safe in log files, but retrying rounds will not fix it."""

    transient = False


class TerminalSinkError(SinkError):
    """A Hudi write that fails the same way on the same input: retrying the round cannot fix it."""

    transient = False


class CheckpointError(TerminalError):
    """The checkpoint stored in the table cannot be read or does not fit the source."""


class SchemaChangeError(TerminalError):
    """A column changed type in a way that cannot be applied without losing values."""


class LeaseHeldError(ConfigError):
    """Another live process writes the table (it holds the table's writer lease): one writer per table."""


class LeaseLostError(TerminalError):
    """This process's writer lease on a table was taken over (its heartbeat stopped for longer than the
    expiry): it must stop writing the table."""


def retry_backoff_s(attempt: int, remaining_s: float) -> float:
    """How long to wait before retrying a transient failure for the ``attempt``-th time (1, 2, ...).

    Doubling from 2 s up to a minute, and never past what is left of the retry budget (at least 1 s).
    """
    return min(MAX_BACKOFF_S, 2.0**attempt, max(1.0, remaining_s))
