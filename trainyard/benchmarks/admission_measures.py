"""The pure figures of `bench admission --real`: one side's JSON, per-class averages, CPU, writes.

Kept apart from the run itself (``admission_real``) so a fast test holds the shape and the
arithmetic without a cluster.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SIDE_KEYS = ("wall_seconds", "cpu_seconds", "avg_time_to_admission_s", "writes_per_workload")


@dataclass
class SideTimes:
    """What one side's run saw: per workload its class, when it was created and when last admitted."""

    class_of: dict[str, str] = field(default_factory=dict)
    created: dict[str, float] = field(default_factory=dict)
    admitted: dict[str, float] = field(default_factory=dict)  # key -> its latest admission, as Kueue's recorder
    evictions: int = 0

    def waits(self) -> dict[str, list[float]]:
        by_class: dict[str, list[float]] = {}
        for key, admitted_at in self.admitted.items():
            by_class.setdefault(self.class_of[key], []).append(admitted_at - self.created[key])
        return by_class


def average(values: Iterable[float]) -> float | None:
    listed = list(values)
    return round(sum(listed) / len(listed), 3) if listed else None


def class_averages(waits: Mapping[str, list[float]]) -> dict[str, float | None]:
    """Average time to admission per workload class (large/medium/small), as Kueue's runner reports it."""
    return {name: average(values) for name, values in sorted(waits.items())}


def process_cpu_seconds(pid: int, stat_root: Path = Path("/proc")) -> float:
    """utime + stime of one process (its threads included), from /proc/PID/stat."""
    text = (stat_root / str(pid) / "stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces: fields after it
    ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of proc(5)
    return ticks / os.sysconf("SC_CLK_TCK")


def workload_writes(writes: Counter[str], workloads: int) -> dict[str, Any]:
    """Writes per workload from ``audit_write_counts``: object and status writes (leases and Events apart)."""
    total = max(1, workloads)
    return {
        "writes_per_workload": round((writes["object"] + writes["status"]) / total, 2),
        "status_writes_per_workload": round(writes["status"] / total, 2),
        "event_writes_per_workload": round(writes["event"] / total, 2),
    }


def side_figures(times: SideTimes, wall: float, cpu: float, writes: Counter[str]) -> dict[str, Any]:
    """One side's JSON object: the four figures the issue names, then the per-class detail."""
    waits = times.waits()
    return {
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "avg_time_to_admission_s": average(w for values in waits.values() for w in values),
        **workload_writes(writes, len(times.class_of)),
        "avg_time_to_admission_s_by_class": class_averages(waits),
        "workloads": len(times.class_of),
        "admitted": len(times.admitted),
        "evictions": times.evictions,
    }


def prefixed_documents(documents: Iterable[Mapping[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The scenario's queue objects under fresh names for one side: namespaces, ClusterQueues and
    Cohorts take ``prefix`` (LocalQueues point at the prefixed ClusterQueues); ResourceFlavors and
    WorkloadPriorityClasses are shared, unchanged."""
    renamed = []
    for original in documents:
        document = {**original, "metadata": dict(original["metadata"]), "spec": dict(original.get("spec") or {})}
        kind, metadata, spec = document["kind"], document["metadata"], document["spec"]
        if metadata.get("namespace"):
            metadata["namespace"] = prefix + metadata["namespace"]
        if kind in ("ClusterQueue", "Cohort"):
            metadata["name"] = prefix + metadata["name"]
        if kind == "ClusterQueue" and spec.get("cohortName"):
            spec["cohortName"] = prefix + spec["cohortName"]
        if kind == "LocalQueue":
            spec["clusterQueue"] = prefix + spec["clusterQueue"]
        if not document["spec"] and "spec" not in original:
            del document["spec"]
        renamed.append(document)
    return renamed
