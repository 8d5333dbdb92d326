"""The error the local launcher raises for input it cannot run: one clear line, no stack trace."""

from __future__ import annotations


class LocalRunError(Exception):
    """A TrainJob (or its rendered JobSet) that cannot run locally; the message says why and the fix."""
