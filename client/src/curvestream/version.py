"""The client's version, which every batch and run record carries."""

__version__ = "0.1.0"
