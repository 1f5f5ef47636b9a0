"""Sources plan and read one batch from a checkpoint; they never write."""

from hudi_cdc.sources.base import Batch, Source
from hudi_cdc.sources.files import FileSource

__all__ = ["Batch", "FileSource", "Source"]
