"""Where the upstream parity tests find the anchors' own example files, and what happens without them.

The files are other projects' YAML (Kueue, Trainer, JobSet, Training Operator), kept outside the
repository: ``$TRAINYARD_UPSTREAM_DIR``, by default ``../shared/upstream`` beside the checkout.
Where they are absent the tests that read them skip, and this package's ``conftest.py`` prints
one line at the end of the session saying how many and how to get them (README.md here).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "TRAINYARD_UPSTREAM_DIR"
CHECKOUT = Path(__file__).resolve().parents[2]
UPSTREAM = Path(os.environ.get(ENV) or CHECKOUT.parent / "shared" / "upstream")
# the skip reason names the folder; the session summary counts skips by it
MISSING = f"the anchors' example files are not at {UPSTREAM}"
needs_upstream = pytest.mark.skipif(not UPSTREAM.is_dir(), reason=MISSING)


def how_to_get_them(skipped: int) -> str:
    """The session's one line when the upstream files are absent."""
    return (
        f"{skipped} upstream parity tests skipped: {MISSING}; set {ENV} to a folder holding them "
        "(which repositories, commits and folders: tests/upstream/README.md)"
    )
