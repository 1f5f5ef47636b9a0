"""The only place that knows Hudi: write options, commits, checkpoints, tombstones."""

from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.sink.tombstones import TombstoneStore

__all__ = ["HudiTable", "TombstoneStore"]
