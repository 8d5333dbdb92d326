"""Run a TrainJob on this machine: its rendered pods become local processes.

``plan_from_jobset`` reads the rendered JobSet into a :class:`LocalPlan`; :class:`LocalLauncher`
runs it (initializers, then numNodes x numProcPerNode torch ranks on loopback, each node on its
own slice of the host's GPUs when it asks for ``nvidia.com/gpu``: :mod:`runtimes.local.devices`) under
the JobSet failurePolicy and the Jobs' podFailurePolicy, and keeps the TrainJob status in the
job directory (:mod:`runtimes.local.store`). Nothing in this package imports torch.
"""

from runtimes.local.errors import LocalRunError
from runtimes.local.launcher import LaunchOptions, LocalLauncher, LocalRunResult
from runtimes.local.plan import LocalPlan, plan_from_jobset
from runtimes.local.store import JobDirectory, LocalJobStore, StatusRecorder

__all__ = [
    "JobDirectory",
    "LaunchOptions",
    "LocalJobStore",
    "LocalLauncher",
    "LocalPlan",
    "LocalRunError",
    "LocalRunResult",
    "StatusRecorder",
    "plan_from_jobset",
]
