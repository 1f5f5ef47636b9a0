"""Debezium envelopes to flat rows: pure DataFrame-to-DataFrame functions."""

from hudi_cdc.envelope.flatten import KNOWN_OPS, flatten

__all__ = ["KNOWN_OPS", "flatten"]
