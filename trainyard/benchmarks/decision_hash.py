"""One sha256 over what a simulation decided: the summary, every wait time and the event count.

Any change to the engine that claims to be a pure speed-up must leave this hash unchanged;
``tests/test_decision_hash.py`` checks it at small sizes, ``bench simulation`` prints it at full size.
Wall-clock figures are not part of the summary, so the hash only moves when a decision does.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol


class DecidedRun(Protocol):
    summary: dict[str, Any]
    wait_times: dict[str, list[float]]
    events: int


def decision_hash(result: DecidedRun) -> str:
    payload = {
        "summary": result.summary,
        "wait_times": {queue: result.wait_times[queue] for queue in sorted(result.wait_times)},
        "events": result.events,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
