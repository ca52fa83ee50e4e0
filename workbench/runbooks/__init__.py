"""Runbooks: the logic behind ``runbooks/*.ipynb`` (the notebooks only call these functions)."""
