"""Stand-ins for the controllers a cluster runs beside trainyard, working over HTTP against any API server.

``JobSetController`` (JobSets → indexed Jobs, JobSet status, success and failure policies,
suspend), ``JobController`` (Jobs → pods, Job status), ``Binder`` (kube-scheduler's binding:
gates, node selectors, affinity, taints, capacity) and ``PodRunner`` (a minimal kubelet;
the sandbox plays KWOK Stages instead: ``simulations.kwok.stage_controller``). ``Standins`` runs
all four on one client.
"""

from .binder import Binder
from .job import COMPLETION_INDEX, JobController
from .jobset import JobSetController
from .runner import EXIT_CODE_ANNOTATION, RUN_SECONDS_ANNOTATION, PodRunner
from .standins import Standins, fast_informers

__all__ = [
    "COMPLETION_INDEX",
    "EXIT_CODE_ANNOTATION",
    "RUN_SECONDS_ANNOTATION",
    "Binder",
    "JobController",
    "JobSetController",
    "PodRunner",
    "Standins",
    "fast_informers",
]
