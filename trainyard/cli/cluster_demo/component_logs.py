"""Where the tour's in-process components log: held back from the story, or to stderr with --verbose."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator


class HeldLogRecords(logging.Handler):
    """Keeps the components' warnings off the story: a retry's traceback is for `kubectl logs`, not the tour."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def component_logs(verbose: bool) -> Iterator[HeldLogRecords]:
    """Route the in-process components' log records: held (counted) by default, to stderr with --verbose."""
    held = HeldLogRecords()
    handler: logging.Handler = logging.StreamHandler(sys.stderr) if verbose else held
    if verbose:
        handler.setLevel(logging.INFO)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    if verbose:
        root.setLevel(logging.INFO)
    try:
        yield held
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
