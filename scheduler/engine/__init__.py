"""The pure admission engine: Kueue quota arithmetic, queues, flavor assignment, preemption, fair sharing.

Objects in, decisions out: no I/O, no clock but the one passed in, deterministic. It owns every
admission and quota rule (no second copy anywhere) and never talks to Kubernetes, the network or
torch. Other packages use only the names below (an import contract holds them to it) and the
facade's public methods, which answer their queries (``workload(key)``, ``cluster_queue(name)``,
``pending_in_order``...); the modules behind them are the engine's own:
``engine`` is the facade, ``core`` what its parts see of it (the parts never import the facade),
``cycle`` one admission cycle, ``flavors``/``flavor_match`` flavor assignment, ``quota`` the
cohort tree, ``preemption``/``candidates`` victims, ``placement`` the bridge to
``scheduler.topology``, ``restore``/``restore_placements`` rebuilding from Workload status, ``topology_check`` the engine as
Kueue's topology admission check (beside Kueue).
"""

from scheduler.engine.admission_checks import AdmissionCheckRegistry, CheckVerdict, quota_reserved_verdicts
from scheduler.engine.cluster import ClusterQueueInfo
from scheduler.engine.config import EngineConfig, RequeuingStrategy, WaitForPodsReady
from scheduler.engine.core import parse_timestamp
from scheduler.engine.engine import AdmissionEngine
from scheduler.engine.explain import AdmissionExplanation, explain_admission
from scheduler.engine.node_failures import ReplacedPlacement
from scheduler.engine.quota import FlavorResource, QuotaNode
from scheduler.engine.results import AdmittedWorkload, CycleResult, EvictedWorkload, PreemptedWorkload
from scheduler.engine.topology_check import (
    TOPOLOGY_CHECK_CONTROLLER,
    CheckPlacement,
    TopologyCheck,
    check_inactive_reason,
)
from scheduler.engine.views import report, waiting_reason, workload_report, workload_status
from scheduler.engine.workloads import Admission, WorkloadInfo, WorkloadState

__all__ = [
    "TOPOLOGY_CHECK_CONTROLLER",
    "Admission",
    "AdmissionCheckRegistry",
    "AdmissionEngine",
    "AdmissionExplanation",
    "AdmittedWorkload",
    "CheckPlacement",
    "CheckVerdict",
    "ClusterQueueInfo",
    "CycleResult",
    "EngineConfig",
    "EvictedWorkload",
    "FlavorResource",
    "PreemptedWorkload",
    "QuotaNode",
    "ReplacedPlacement",
    "RequeuingStrategy",
    "TopologyCheck",
    "WaitForPodsReady",
    "WorkloadInfo",
    "WorkloadState",
    "check_inactive_reason",
    "explain_admission",
    "parse_timestamp",
    "quota_reserved_verdicts",
    "report",
    "waiting_reason",
    "workload_report",
    "workload_status",
]
