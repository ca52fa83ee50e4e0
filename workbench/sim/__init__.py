"""A simulated SGLang-style inference server and GPU shim (standard library only)."""
