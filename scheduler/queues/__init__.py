"""Queue quota administration: pure queries over an engine loaded with the queues.

``load_state`` loads Kueue objects and Workloads into one ``AdmissionEngine`` and lets it
settle; the queries read it: ``cluster_queue_summaries`` and ``cohort_summaries`` (quota,
usage, borrowing, lending, inactive flags), ``pending_workloads`` (admission order with
positions, as Kueue's visibility API), ``describe_workload`` (the engine's story of one
workload) and ``plan_quota_change`` (a quota change validated and rehearsed). Nothing here
prints or does I/O; the CLI, the visibility API and the dashboard all call these.
"""

from scheduler.queues.describe import Interruption, StartEstimate, WorkloadStory, describe_workload
from scheduler.queues.pending import (
    PendingWorkload,
    find_pending,
    pending_workloads,
    place_for_people,
    positioned,
    queue_order,
)
from scheduler.queues.quota_change import (
    QuotaChange,
    QuotaChangeError,
    QuotaEffect,
    QuotaPlan,
    changed_cluster_queue,
    plan_quota_change,
    quota_fields,
)
from scheduler.queues.state import QueueState, load_state, reload_with, run_to_quiescence
from scheduler.queues.summaries import (
    ClusterQueueSummary,
    CohortSummary,
    ResourceLine,
    cluster_queue_summaries,
    cluster_queue_summary,
    cohort_summaries,
)

__all__ = [
    "ClusterQueueSummary",
    "CohortSummary",
    "Interruption",
    "PendingWorkload",
    "QueueState",
    "QuotaChange",
    "QuotaChangeError",
    "QuotaEffect",
    "QuotaPlan",
    "ResourceLine",
    "StartEstimate",
    "WorkloadStory",
    "changed_cluster_queue",
    "cluster_queue_summaries",
    "cluster_queue_summary",
    "cohort_summaries",
    "describe_workload",
    "find_pending",
    "load_state",
    "pending_workloads",
    "place_for_people",
    "plan_quota_change",
    "positioned",
    "queue_order",
    "quota_fields",
    "reload_with",
    "run_to_quiescence",
]
