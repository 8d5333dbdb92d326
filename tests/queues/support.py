"""Shared helpers for the queue administration tests: the YAML fixtures, loaded."""

from __future__ import annotations

from pathlib import Path

from scheduler.api.loading import load_kueue_objects
from scheduler.engine.engine import parse_timestamp
from scheduler.queues import QueueState, load_state

FIXTURES = Path(__file__).parent / "fixtures"
NOW = parse_timestamp("2026-01-01T01:00:00Z") or 0.0


def fixture_state() -> QueueState:
    loaded = load_kueue_objects([FIXTURES])
    return load_state(loaded.objects, loaded.workloads, now=NOW, namespaces=loaded.namespaces)
