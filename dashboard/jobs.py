"""The Jobs page's rows: every TrainJob of the cluster, every other Workload the engine holds,
and the local runs, each with its queue, status, age, nodes and GPUs.

A TrainJob's status is its own where it has ended (Complete, Failed), else its Workload's in
the engine (Admitted, Running once its JobSet has active pods, Pending with the engine's
reason, Preempted, Inadmissible). Rows are built once per change of the data and filtered and
paged per request, so a page of 50,000 workloads costs one filter pass.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from dashboard.local_runs import LocalRun
from scheduler.engine import AdmissionEngine, WorkloadInfo, WorkloadState, parse_timestamp, waiting_reason
from scheduler.queues import QueueState

GPU = "nvidia.com/gpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
STATE_WORDS = {
    WorkloadState.ADMITTED: "Admitted",
    WorkloadState.PENDING: "Pending",
    WorkloadState.INADMISSIBLE: "Inadmissible",
    WorkloadState.DEACTIVATED: "Inadmissible",
    WorkloadState.FINISHED: "Finished",
}
WAITING = ("Pending", "Preempted", "Inadmissible")
STATUSES = ("Pending", "Preempted", "Admitted", "Running", "Complete", "Failed", "Inadmissible", "Finished", "Created")


class JobFacts:
    """What a row shows but no filter reads: worked out only for the rows on the page (nodes,
    GPUs, the engine's reason), so a listing of 50,000 workloads costs one pass of cheap fields."""

    __slots__ = ("engine", "info", "planned_gpus", "planned_nodes", "pods")

    def __init__(
        self,
        engine: AdmissionEngine | None,
        info: WorkloadInfo | None,
        pods: list[dict[str, Any]] | None = None,
        planned_nodes: int = 0,
        planned_gpus: int = 0,
    ) -> None:
        self.engine = engine
        self.info = info
        self.pods = pods or []
        self.planned_nodes = planned_nodes  # without a Workload: what the job asks for
        self.planned_gpus = planned_gpus

    def nodes(self) -> int:
        info = self.info
        if info is not None and info.admission is not None:
            placed = placed_nodes(info)
            if placed:
                return len(placed)
        bound = {pod["spec"].get("nodeName") for pod in self.pods if (pod.get("spec") or {}).get("nodeName")}
        if bound:
            return len(bound)
        return sum(pod_set.count for pod_set in info.pod_sets) if info is not None else self.planned_nodes

    def gpus(self) -> int:
        return gpu_count(self.info) if self.info is not None else self.planned_gpus

    def reason(self, status: str) -> str:
        if status not in WAITING or self.engine is None or self.info is None:
            return ""
        return waiting_reason(self.engine, self.info)


NO_FACTS = JobFacts(None, None)


@dataclass
class JobRow:
    kind: str  # TrainJob | Workload | local
    namespace: str
    name: str
    local_queue: str
    cluster_queue: str
    status: str
    created: float  # epoch seconds
    workload: str | None  # the engine's key (namespace/name) of its Workload
    facts: JobFacts = NO_FACTS

    @property
    def nodes(self) -> int:
        return self.facts.nodes()

    @property
    def gpus(self) -> int:
        return self.facts.gpus()

    @property
    def reason(self) -> str:
        return self.facts.reason(self.status)

    @property
    def href(self) -> str:
        if self.kind == "local":
            return f"/local/{self.name}"
        return f"/jobs/{self.namespace}/{self.name}"

    def matches(self, text: str, status: str, queue: str) -> bool:
        if status and self.status != status:
            return False
        if queue and queue not in (self.cluster_queue, self.local_queue):
            return False
        return not text or text in f"{self.namespace}/{self.name} {self.cluster_queue} {self.local_queue}"


def workload_status(info: WorkloadInfo) -> str:
    if info.state is WorkloadState.PENDING and info.evictions and info.evictions[-1][1] == "Preempted":
        return "Preempted"
    return STATE_WORDS[info.state]


def placed_nodes(info: WorkloadInfo) -> dict[str, int]:
    """node -> pods the engine placed there (topology-aware flavors), empty when it placed none."""
    found: dict[str, int] = {}
    admission = info.admission
    if admission is None:
        return found
    for gang in admission.placements.values():
        for pod_set in gang.pod_sets:
            for node in pod_set.nodes:
                found[node] = found.get(node, 0) + 1
    return found


def _engine_row(engine: AdmissionEngine, info: WorkloadInfo, kind: str, name: str) -> JobRow:
    return JobRow(
        kind,
        info.namespace,
        name,
        info.local_queue,
        info.cluster_queue or "",
        workload_status(info),
        info.created,
        info.key,
        JobFacts(engine, info),
    )


def gpu_count(info: WorkloadInfo) -> int:
    """GPUs a workload asks for, over every pod of every pod set (the engine counts GPUs as units)."""
    return sum(pod_set.requests.get(GPU, 0) * pod_set.count for pod_set in info.pod_sets)


def _conditions(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = (document.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in found if c.get("status") == "True"}


def trainjob_status(trainjob: dict[str, Any], info: WorkloadInfo | None) -> str:
    """Complete or Failed from the TrainJob; else its Workload's state, Running once pods run."""
    conditions = _conditions(trainjob)
    for ended in ("Complete", "Failed"):
        if ended in conditions:
            return ended
    if info is None:
        return "Suspended" if (trainjob.get("spec") or {}).get("suspend") else "Created"
    status = workload_status(info)
    jobs = (trainjob.get("status") or {}).get("jobsStatus") or []
    if status == "Admitted" and any((job.get("active") or 0) > 0 for job in jobs):
        return "Running"
    return status


def _trainjob_gpus(trainjob: dict[str, Any]) -> int:
    trainer = (trainjob.get("spec") or {}).get("trainer") or {}
    resources = trainer.get("resourcesPerNode") or {}
    per_node = (resources.get("limits") or {}).get(GPU) or (resources.get("requests") or {}).get(GPU) or 0
    try:
        return int(per_node) * int(trainer.get("numNodes") or 1)
    except ValueError:
        return 0


def trainjob_row(
    engine: AdmissionEngine | None, trainjob: dict[str, Any], workload: str | None, pods: list[dict[str, Any]]
) -> JobRow:
    metadata = trainjob.get("metadata") or {}
    info = engine.workload(workload) if engine is not None and workload else None
    trainer = (trainjob.get("spec") or {}).get("trainer") or {}
    return JobRow(
        kind="TrainJob",
        namespace=str(metadata.get("namespace") or "default"),
        name=str(metadata.get("name")),
        local_queue=str((metadata.get("labels") or {}).get(QUEUE_LABEL, "")),
        cluster_queue=(info.cluster_queue or "") if info is not None else "",
        status=trainjob_status(trainjob, info),
        created=parse_timestamp(metadata.get("creationTimestamp")) or time.time(),
        workload=workload,
        facts=JobFacts(engine, info, pods, int(trainer.get("numNodes") or 1), _trainjob_gpus(trainjob)),
    )


def local_row(run: LocalRun) -> JobRow:
    facts = JobFacts(None, None, planned_nodes=run.nodes, planned_gpus=run.gpus)
    return JobRow("local", "local", run.name, "", "", run.status, parse_timestamp(run.started) or 0.0, None, facts)


def owners(workloads: Iterable[dict[str, Any]]) -> dict[str, str]:
    """TrainJob uid -> its Workload's key (namespace/name), from the Workloads' ownerReferences."""
    found: dict[str, str] = {}
    for document in workloads:
        metadata = document.get("metadata") or {}
        for reference in metadata.get("ownerReferences") or []:
            if reference.get("kind") == "TrainJob" and reference.get("uid"):
                found[str(reference["uid"])] = f"{metadata.get('namespace')}/{metadata.get('name')}"
    return found


JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"


def build_rows(
    state: QueueState | None,
    trainjobs: list[dict[str, Any]],
    workloads: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    local: list[LocalRun],
) -> list[JobRow]:
    """Every job, newest first: TrainJobs, the engine's other workloads, local runs."""
    engine = state.engine if state is not None else None
    owned = owners(workloads)
    pods_by_job: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for pod in pods:
        metadata = pod.get("metadata") or {}
        job = (metadata.get("labels") or {}).get(JOBSET_LABEL)
        if job:
            pods_by_job.setdefault((str(metadata.get("namespace")), str(job)), []).append(pod)
    rows: list[JobRow] = []
    claimed: set[str] = set()
    for trainjob in trainjobs:
        metadata = trainjob.get("metadata") or {}
        workload = owned.get(str(metadata.get("uid")))
        if workload is not None:
            claimed.add(workload)
        job = (str(metadata.get("namespace")), str(metadata.get("name")))
        rows.append(trainjob_row(engine, trainjob, workload, pods_by_job.get(job, [])))
    if engine is not None:
        for info in engine.all_workloads():
            if info.key not in claimed:
                rows.append(_engine_row(engine, info, "Workload", info.name))
    rows.extend(local_row(run) for run in local)
    rows.sort(key=attrgetter("namespace", "name"))
    rows.sort(key=attrgetter("created"), reverse=True)  # newest first; a stable sort keeps the names' order
    return rows
