"""Conflicts are routine under load: the status writer counts them and says so once in a while.

A 409 means the cache was behind (a finish or another writer's status landed first), and the next
cycle reconciles the Workload again. At 3,000 Workloads on the real kube-apiserver a run met 120
of them, each logged on a line of its own; a storm of them (a fault-injecting proxy, a cut watch)
wrote thousands. Now they are counted, and told at most once per ``CONFLICT_LOG_INTERVAL``.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from queue_support import PatchHook

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.queueing import workload_writer
from scheduler.controllers.queueing.engine_mirror import EngineMirror
from scheduler.controllers.queueing.workload_writer import WorkloadStatusWriter
from scheduler.kube import KubeApiError, KubeKind

LOGGER = "scheduler.controllers.queueing.workload_writer"


class ConflictingServer(PatchHook):
    """Every status patch meets 409 Conflict; a read returns the Workload at a newer revision."""

    def __init__(self) -> None:  # no API client: nothing here goes over the wire
        self.patches = 0

    async def before_patch(self, kind: str, name: str, patch: Any, *, status: bool) -> None:
        self.patches += 1
        raise KubeApiError(409, "Conflict", f'Operation cannot be fulfilled on workloads "{name}"')

    async def get(self, kind: str | KubeKind, name: str, namespace: str | None = None) -> dict[str, Any]:
        return _workload(name, revision=self.patches + 100)


def _workload(name: str, revision: int = 1) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "team-a", "resourceVersion": str(revision)}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": metadata}


async def test_conflicts_are_counted_and_told_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    server = ConflictingServer()
    writer = WorkloadStatusWriter(server, EngineMirror(ClusterCache()), concurrency=4)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        results = [await writer.write(f"team-a/job-{i}", _workload(f"job-{i}"), {"conditions": []}) for i in range(50)]
    assert results == [False] * 50  # each write still reports its failure to its caller
    assert writer.conflicts == 50
    told = [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.INFO]
    assert len(told) == 1, [r.getMessage() for r in told]
    assert "1 Workload status write(s) met a conflict" in told[0].getMessage()
    assert writer.refusal("team-a/job-0") is None  # a conflict is not a refusal of the write itself


async def test_the_next_line_after_the_interval_counts_what_was_not_told(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = ConflictingServer()
    writer = WorkloadStatusWriter(server, EngineMirror(ClusterCache()), concurrency=4)
    for i in range(5):
        await writer.write(f"team-a/job-{i}", _workload(f"job-{i}"), {"conditions": []})
    monkeypatch.setattr(workload_writer, "CONFLICT_LOG_INTERVAL", 0.0)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        await writer.write("team-a/late", _workload("late"), {"conditions": []})
    told = [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= logging.INFO]
    assert len(told) == 1
    assert told[0].startswith("5 Workload status write(s) met a conflict")
    assert "the latest on team-a/late" in told[0]
