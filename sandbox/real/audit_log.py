"""Reading kube-apiserver's audit log, rotated backups included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def audit_events(audit_log: Path) -> Iterator[dict[str, Any]]:
    """Every event in a kube-apiserver audit log, its rotated backups (``audit-<time>.log``) first."""
    backups = sorted(audit_log.parent.glob(f"{audit_log.stem}-*{audit_log.suffix}"))
    for path in [*backups, audit_log]:
        if not path.exists():
            continue
        with path.open() as lines:
            for line in lines:
                if line.endswith("\n"):  # a last line still being written is read next time
                    yield json.loads(line)
