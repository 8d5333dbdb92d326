"""What a run of the comparison decided, and the jobs the lockstep driver follows.

``Decision`` is one thing the service (or the embedded simulator) decided about a job at a
virtual time; ``RunRecord`` is every decision of one run with the order of admissions, which
``sandbox.compare.comparison`` puts side by side. ``TrackedJob`` is the driver's view of one
TrainJob in the sandbox: its Workload and pods as last committed, and whether it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulations.scenarios import BuiltScenario
from simulations.workloads import JobSpec


@dataclass
class Decision:
    """One thing the service (or the simulator) decided about a job, at a virtual time."""

    time: float
    kind: str  # "admitted" | "preempted" | "evicted" | "refused" (at submission: it can never fit)
    cluster_queue: str = ""
    flavors: tuple[tuple[str, str], ...] = ()
    nodes: tuple[str, ...] = ()  # sorted node of every pod (empty where no placement was made)
    reason: str = ""  # why a job was refused (not compared: the two runs word it apart)

    def same_as(self, other: Decision, *, with_time: bool) -> bool:
        if self.kind != other.kind or (with_time and abs(self.time - other.time) > 1e-6):
            return False
        if self.kind != "admitted":
            return True
        return (
            self.cluster_queue == other.cluster_queue
            and self.flavors == other.flavors
            and (not self.nodes or not other.nodes or self.nodes == other.nodes)
        )


@dataclass
class RunRecord:
    """What one run decided: per job its decisions in order, and the order of admissions."""

    decisions: dict[str, list[Decision]] = field(default_factory=dict)
    admissions: list[str] = field(default_factory=list)  # job keys in admission order (re-admissions repeat)
    jobs: list[str] = field(default_factory=list)  # every job submitted
    summary: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0
    api_requests: int = 0
    cycles: int = 0

    def add(self, key: str, decision: Decision) -> None:
        self.decisions.setdefault(key, []).append(decision)
        if decision.kind == "admitted":
            self.admissions.append(key)


def amount_of(built: BuiltScenario, job: JobSpec) -> int:
    """The primary resource a job holds, as the simulator counts it (GPUs, or CPU cores)."""
    return job.cpu_milli * job.nodes // 1000 if built.primary_resource == "cpu" else job.gpus


@dataclass
class TrackedJob:
    spec: JobSpec
    workload: dict[str, Any] | None = None  # its Workload as last committed
    admitted: bool = False  # the server shows status.admission
    finished: bool = False
    running: bool = False  # an admission stamped and not yet released
    admission: Decision | None = None  # the running admission (its nodes fill in as pods are bound)
    generation: int = 0
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> latest pod


def nodes_of(job: TrackedJob) -> tuple[str, ...]:
    """The sorted nodes of the job's bound pods."""
    return tuple(sorted(str(p["spec"]["nodeName"]) for p in job.pods.values() if (p.get("spec") or {}).get("nodeName")))
