"""One job's page data: the TrainJob (or Workload), its Workload's story, placement, pods and events.

The story is ``scheduler.queues.describe_workload``, what `trainyard queues describe` prints; the
placement is the engine's (pod index → node → the node's domain at each topology level).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dashboard.data import DashboardData
from dashboard.jobs import JOBSET_LABEL, owners
from runtimes.examples.metrics import parse_metrics_line
from scheduler.queues import QueueState, WorkloadStory, describe_workload


@dataclass(frozen=True)
class PlacedPod:
    pod_set: str
    index: int
    node: str
    domains: tuple[str, ...]  # the node's value at each level of ``JobDetail.levels``


@dataclass
class JobDetail:
    kind: str  # TrainJob | Workload
    namespace: str
    name: str
    trainjob: dict[str, Any] | None = None
    workload: dict[str, Any] | None = None  # the Workload document, from the cluster or the files
    workload_key: str | None = None
    story: WorkloadStory | None = None
    levels: tuple[str, ...] = ()
    placement: list[PlacedPod] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)

    @property
    def conditions(self) -> list[tuple[str, dict[str, Any]]]:
        found = []
        for owner, document in (("TrainJob", self.trainjob), ("Workload", self.workload)):
            for condition in ((document or {}).get("status") or {}).get("conditions") or []:
                found.append((owner, condition))
        return found


def placement_of(state: QueueState, key: str) -> tuple[tuple[str, ...], list[PlacedPod]]:
    info = state.engine.workload(key)
    admission = info.admission if info is not None else None
    if admission is None:
        return (), []
    levels: tuple[str, ...] = ()
    placed: list[PlacedPod] = []
    for gang in admission.placements.values():
        for pod_set in gang.pod_sets:
            levels = pod_set.topology_levels
            for index, node in enumerate(pod_set.nodes):
                values = pod_set.node_values[node]
                domains = tuple(values[position] for position in pod_set.value_positions)
                placed.append(PlacedPod(pod_set.name, index, node, domains))
    return levels, placed


def _document(data: DashboardData, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    return data.objects.get(kind, name, namespace) if data.objects is not None else None


def resolve(data: DashboardData, state: QueueState | None, namespace: str, name: str) -> JobDetail | str | None:
    """The job ``namespace/name`` (a TrainJob, else a Workload); a TrainJob's name (str) when
    ``name`` is the Workload of one; None when nothing has that name."""
    trainjob = _document(data, "TrainJob", namespace, name)
    workload: dict[str, Any] | None = None
    key: str | None = None
    if trainjob is not None:
        uid = str((trainjob.get("metadata") or {}).get("uid"))
        key = owners(data.documents("Workload", namespace)).get(uid)
        if key is not None:
            workload = _document(data, "Workload", namespace, key.partition("/")[2])
    else:
        workload = _document(data, "Workload", namespace, name)
        for reference in ((workload or {}).get("metadata") or {}).get("ownerReferences") or []:
            if reference.get("kind") == "TrainJob":
                return str(reference.get("name"))
        key = f"{namespace}/{name}"
        if workload is None and (state is None or state.engine.workload(key) is None):
            return None
    detail = JobDetail("TrainJob" if trainjob is not None else "Workload", namespace, name, trainjob, workload, key)
    info = state.engine.workload(key) if state is not None and key is not None else None
    if state is not None and key is not None and info is not None:
        detail.story = describe_workload(state, key)
        detail.levels, detail.placement = placement_of(state, key)
        if detail.workload is None and info.source is not None:
            detail.workload = info.source.to_dict()
    if trainjob is not None and data.objects is not None:
        detail.pods = sorted(
            data.objects.list("Pod", namespace, labels={JOBSET_LABEL: name}),
            key=lambda pod: str((pod.get("metadata") or {}).get("name")),
        )
    return detail


def metrics_from_lines(lines: list[str]) -> list[dict[str, Any]]:
    """The metrics reports among a log's lines, in order."""
    return [values for values in map(parse_metrics_line, lines) if values is not None]


def metric_charts(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Charts of a trainer's reports: loss, samples per second and progress, by step."""
    steps = [report.get("step", index) for index, report in enumerate(reports)]
    charts: dict[str, Any] = {}
    for key, title in (("loss", "loss"), ("samples_per_second", "samples/s"), ("progress_percentage", "progress %")):
        points = [(step, report[key]) for step, report in zip(steps, reports, strict=True) if key in report]
        if points:
            charts[title] = {"x": [p[0] for p in points], "series": {title: [p[1] for p in points]}, "xlabel": "step"}
    return charts
