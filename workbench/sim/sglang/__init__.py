"""Simulated SGLang runtime (a faithful stand-in for ``sglang`` inside the simulated GPU hosts)."""

__version__ = "0.5.9"
