"""Scenario specs: what a scenario asks for, and what a built one hands the simulator."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from simulations.cluster_spec import (
    ClusterSpec,
    QueueSpec,
)
from simulations.events import RandomStreams
from simulations.kwok import DEFAULT_STAGES_DIR
from simulations.workloads import JobSpec, SyntheticWorkload

IMMEDIATE_STAGES_DIR = DEFAULT_STAGES_DIR.parent / "stages-immediate"


@dataclass(frozen=True)
class FailureSpec:
    node_mtbf_hours: float
    repair_seconds: float


@dataclass(frozen=True)
class KueuePerfSpec:
    """Kueue's test/performance/scheduler generator: cohorts × ClusterQueues × workload classes."""

    cohorts: int
    queues_per_cohort: int
    # (class, count per CQ, cpu, runtime seconds, priority, interval seconds)
    classes: tuple[tuple[str, int, int, float, int, float], ...]
    nominal_cpu: int = 20
    borrowing_limit_cpu: int = 100


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str = ""
    cluster: ClusterSpec | None = None
    queues: QueueSpec = field(default_factory=QueueSpec)
    workload: SyntheticWorkload | None = None
    trace: Path | None = None
    kueue_perf: KueuePerfSpec | None = None
    fair_sharing: bool = False
    pods_ready_timeout: float | None = None
    failures: FailureSpec | None = None
    stages: tuple[Path, ...] = (DEFAULT_STAGES_DIR,)
    sample_seconds: float = 300.0
    warmup_seconds: float = 0.0  # left out of the metrics (steady-state scenarios)


@dataclass
class BuiltScenario:
    """Everything a run needs: Kueue objects, nodes, topology levels and a job stream factory."""

    scenario: Scenario
    objects: list[Resource]
    nodes: list[Node]
    node_documents: list[dict[str, Any]]
    levels: tuple[str, ...]
    job_count: int
    jobs: Callable[[RandomStreams], Iterator[JobSpec]]
    primary_resource: str
    capacity: int  # cluster total of the primary resource (GPUs, or CPU cores for Kueue perf)
    nominal: dict[str, int]  # ClusterQueue -> nominal quota of the primary resource
    notes: dict[str, int] = field(default_factory=dict)
    horizon: float | None = None  # the run stops here (arrivals stop here too): steady-state workloads
