"""Debezium envelopes to flat rows: pure DataFrame-to-DataFrame functions."""

from hudi_cdc.envelope.flatten import KNOWN_OPS, first_errors, flatten

__all__ = ["KNOWN_OPS", "flatten", "first_errors"]
