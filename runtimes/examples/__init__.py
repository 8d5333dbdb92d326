"""Bundled example trainers.

Importing this package is cheap: torch is imported only inside the trainer functions, in the
processes that train.
"""
