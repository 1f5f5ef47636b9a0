"""The package's version, in a module of its own so the lower layers can read it (setup.cfg does too)."""

__version__ = "0.1.0"
