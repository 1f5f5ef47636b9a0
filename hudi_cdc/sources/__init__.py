"""Sources plan and read one batch from a checkpoint; they never write."""

from hudi_cdc.envelope.events import Batch
from hudi_cdc.sources.base import Source
from hudi_cdc.sources.files import FileSource

__all__ = ["Batch", "FileSource", "Source"]
