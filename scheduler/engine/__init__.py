"""The pure admission engine: Kueue quota arithmetic, queues, flavor assignment, preemption, fair sharing.

Objects in, decisions out: no I/O, no clock but the one passed in, deterministic. It owns every
admission and quota rule (no second copy anywhere) and never talks to Kubernetes, the network or
torch. Other packages use only the names below; the modules behind them are the engine's own:
``engine`` is the facade, ``core`` what its parts see of it (the parts never import the facade),
``cycle`` one admission cycle, ``flavors``/``flavor_match`` flavor assignment, ``quota`` the
cohort tree, ``preemption``/``candidates`` victims, ``placement`` the bridge to
``scheduler.topology``, ``restore``/``restore_placements`` rebuilding from Workload status.

When ``make install`` (``python -m scheduler.native_build``) has compiled the hot modules and
they match their sources, they are what runs (see ``scheduler.native``); otherwise everything is
pure Python (``TRAINYARD_PURE_ENGINE=1`` forces that).
"""

from scheduler.native import activate as _activate_native

_activate_native(__path__, __name__)  # before any submodule is imported: the imports below must follow it

from scheduler.engine.config import EngineConfig, RequeuingStrategy, WaitForPodsReady  # noqa: E402
from scheduler.engine.core import parse_timestamp  # noqa: E402
from scheduler.engine.engine import AdmissionEngine  # noqa: E402
from scheduler.engine.results import AdmittedWorkload, CycleResult, EvictedWorkload, PreemptedWorkload  # noqa: E402
from scheduler.engine.views import report, waiting_reason  # noqa: E402
from scheduler.engine.workloads import WorkloadInfo, WorkloadState  # noqa: E402

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
    "parse_timestamp",
    "report",
    "waiting_reason",
]
