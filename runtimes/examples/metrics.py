"""The line protocol a trainer uses to report metrics to the local launcher.

A trainer prints one line ``trainyard:metrics {json}`` to stdout; the launcher parses it into
the TrainJob's ``status.trainerStatus`` (the shape of Kubeflow Trainer's TrainJobStatus
plugin: progressPercentage, estimatedRemainingSeconds, metrics[{name, value}]) and shows it in
`trainyard run`'s output. Plain stdout keeps the protocol usable from any process, in any
language, without a server.
"""

from __future__ import annotations

import json
from typing import Any

METRICS_PREFIX = "trainyard:metrics "

# Keys with a dedicated place in trainerStatus; every other key becomes a named metric.
PROGRESS_KEY = "progress_percentage"
REMAINING_KEY = "estimated_remaining_seconds"


def format_metrics_line(values: dict[str, Any]) -> str:
    """One metrics line, ready to print (no trailing newline)."""
    return METRICS_PREFIX + json.dumps(values, sort_keys=True, separators=(",", ":"))


def parse_metrics_line(line: str) -> dict[str, Any] | None:
    """The metrics of a line, or None when the line is not a (valid) metrics line."""
    if not line.startswith(METRICS_PREFIX):
        return None
    try:
        values = json.loads(line[len(METRICS_PREFIX) :])
    except json.JSONDecodeError:
        return None
    return values if isinstance(values, dict) else None
