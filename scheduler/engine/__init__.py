"""The pure admission engine: Kueue quota arithmetic, queues, flavor assignment, preemption, fair sharing.

Objects in, decisions out: no I/O, no clock but the one passed in, deterministic.
"""

from scheduler.engine.config import EngineConfig, RequeuingStrategy, WaitForPodsReady
from scheduler.engine.engine import AdmissionEngine
from scheduler.engine.results import AdmittedWorkload, CycleResult, EvictedWorkload, PreemptedWorkload
from scheduler.engine.workloads import WorkloadInfo, WorkloadState

__all__ = [
    "AdmissionEngine",
    "AdmittedWorkload",
    "CycleResult",
    "EngineConfig",
    "EvictedWorkload",
    "PreemptedWorkload",
    "RequeuingStrategy",
    "WaitForPodsReady",
    "WorkloadInfo",
    "WorkloadState",
]
