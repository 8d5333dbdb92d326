"""Scenarios: built-in ones and YAML files, turned into objects, nodes and a job stream.

Scenario file schema (every key optional except ``name``; unknown keys are errors)::

    name: my-cluster                # shown in reports
    description: text
    cluster:                        # synthetic hardware (simulations.cluster.ClusterSpec)
      zones: 1
      spinesPerZone: 4
      blocksPerSpine: 8
      nodesPerBlock: 32
      gpusPerNode: 8
      nvlinkNodes: 1                # nodes per NVLink domain (must divide nodesPerBlock)
      gpuModel: H100
      cpu: 224                      # cores per node
      memoryGi: 2048
    teams:                          # one ClusterQueue + LocalQueue per team, all in one cohort
    - {name: team-a, share: 0.5, borrowingLimitShare: 0.25, weight: 1, arrivalWeight: 1, priorityClass: normal}
    queueing: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority, fairSharing: false}
    workload:                       # synthetic TrainJobs (simulations.workloads)
      jobs: 2000
      mix: kalos                    # kalos | helios | philly | philly-lognormal
      load: 0.9                     # offered GPU-seconds / capacity
      durationScale: 1.0
      topologyMode: preferred       # how multi-node jobs ask: required | preferred | none
      topologyLevel: null           # default: the level just above the hostname
      highPriorityFraction: 0.0
      maxDurationSeconds: 2592000   # clip the duration tail
    trace: jobs.csv                 # instead of workload: a job CSV or the openb directory
    waitForPodsReady: {timeoutSeconds: 600}
    failures: {nodeMtbfHours: 2000, repairSeconds: 3600}
    stages: [../manifests/kwok/stages]   # KWOK Stage files or directories
    sampleSeconds: 300

Paths are relative to the scenario file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import ClusterQueue, Cohort, LocalQueue, ResourceFlavor, WorkloadPriorityClass
from simulations.cluster import (
    GPU_RESOURCE,
    LOCAL_QUEUE_NAME,
    TOPOLOGY_NAME,
    ClusterSpec,
    QueueSpec,
    TeamSpec,
    build_node_documents,
    build_queues,
    build_topology,
    capacity_by_model,
    nodes_from_documents,
)
from simulations.errors import SimulationInputError
from simulations.events import RandomStreams
from simulations.kwok import DEFAULT_STAGES_DIR
from simulations.workloads import MIXES, JobSpec, SyntheticWorkload, TeamLoad, generate_jobs
from simulations.yamlsource import FieldPath, SourceDocument, load_documents

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


# ------------------------------------------------------------------------------ built-ins

KUEUE_BASELINE = KueuePerfSpec(
    cohorts=5,
    queues_per_cohort=6,
    classes=(("small", 350, 1, 0.2, 50, 0.1), ("medium", 100, 5, 0.5, 100, 0.5), ("large", 50, 20, 1.0, 200, 1.2)),
)
KUEUE_LARGE = KueuePerfSpec(
    cohorts=10,
    queues_per_cohort=100,
    classes=(("small", 35, 1, 0.15, 50, 0.06), ("medium", 11, 5, 0.35, 100, 0.3), ("large", 4, 20, 0.7, 200, 0.7)),
)

BUILTIN: dict[str, Scenario] = {
    "gpu-1k": Scenario(
        name="gpu-1k",
        description="1,024 nodes × 8 H100 (4 spines × 8 blocks × 32 nodes), 4 teams, 2,000 TrainJobs (Kalos mix)",
        cluster=ClusterSpec(zones=1, spines_per_zone=4, blocks_per_spine=8, nodes_per_block=32),
        workload=SyntheticWorkload(jobs=2000, mix="kalos", load=2.0, max_duration=86400.0),
        sample_seconds=600.0,
    ),
    "gpu-10k": Scenario(
        name="gpu-10k",
        description="10,240 nodes × 8 GPUs (2 zones × 4 spines × 16 blocks × 80 nodes, NVLink domains of 8), 8 teams, 20,000 TrainJobs",
        cluster=ClusterSpec(zones=2, spines_per_zone=4, blocks_per_spine=16, nodes_per_block=80, nvlink_nodes=8),
        queues=QueueSpec(teams=tuple(TeamSpec(f"team-{c}", 0.125) for c in "abcdefgh")),
        workload=SyntheticWorkload(
            jobs=20000,
            mix="kalos",
            load=1.2,
            max_duration=86400.0,
            teams=tuple(TeamLoad(f"team-{c}") for c in "abcdefgh"),
        ),
        sample_seconds=1800.0,
    ),
    "kueue-baseline": Scenario(
        name="kueue-baseline",
        description="Kueue perf baseline: 5 cohorts × 6 ClusterQueues, 15,000 CPU workloads small/medium/large",
        kueue_perf=KUEUE_BASELINE,
        stages=(IMMEDIATE_STAGES_DIR,),
        sample_seconds=5.0,
    ),
    "kueue-large": Scenario(
        name="kueue-large",
        description="Kueue perf large-scale: 10 cohorts × 100 ClusterQueues, 50,000 CPU workloads",
        kueue_perf=KUEUE_LARGE,
        stages=(IMMEDIATE_STAGES_DIR,),
        sample_seconds=5.0,
    ),
}

BENCH_SCENARIO = Scenario(
    name="bench-10k",
    description="10,000 nodes × 8 GPUs (10 spines × 10 blocks × 100 nodes), 4 teams, 100,000 TrainJobs",
    cluster=ClusterSpec(zones=1, spines_per_zone=10, blocks_per_spine=10, nodes_per_block=100),
    workload=SyntheticWorkload(jobs=100_000, mix="kalos", load=1.2, max_duration=86400.0),
    sample_seconds=3600.0,
)


# ---------------------------------------------------------------------------------- build


def build(scenario: Scenario) -> BuiltScenario:
    if scenario.kueue_perf is not None:
        return _build_kueue_perf(scenario, scenario.kueue_perf)
    if scenario.trace is not None and scenario.trace.is_dir():
        return _build_openb(scenario)
    cluster = scenario.cluster or ClusterSpec()
    problems = cluster.validate()
    if problems:
        raise SimulationInputError(scenario.name, None, "cluster", "; ".join(problems))
    documents = build_node_documents(cluster)
    nodes = nodes_from_documents(documents)
    levels = cluster.levels
    objects: list[Resource] = [build_topology(levels)]
    objects.extend(build_queues(scenario.queues, capacity_by_model(cluster)))
    nominal = {t.name: int(cluster.gpu_count * t.share) for t in scenario.queues.teams}
    if scenario.trace is not None:
        from simulations.traces.jobcsv import read_job_csv

        trace_jobs = read_job_csv(scenario.trace)
        known = {t.name for t in scenario.queues.teams}
        for job in trace_jobs:
            if job.team not in known:
                raise SimulationInputError(
                    str(scenario.trace),
                    None,
                    "team",
                    f"team {job.team!r} of {job.name} has no queue; teams are {', '.join(sorted(known))}",
                )
        return BuiltScenario(
            scenario,
            objects,
            nodes,
            documents,
            levels,
            len(trace_jobs),
            lambda _: iter(trace_jobs),
            GPU_RESOURCE,
            cluster.gpu_count,
            nominal,
        )
    workload = scenario.workload or SyntheticWorkload(jobs=1000)

    def jobs(streams: RandomStreams) -> Iterator[JobSpec]:
        return generate_jobs(workload, cluster.gpu_count, cluster.gpus_per_node, streams, topology_levels=levels)

    return BuiltScenario(
        scenario, objects, nodes, documents, levels, workload.jobs, jobs, GPU_RESOURCE, cluster.gpu_count, nominal
    )


def _build_openb(scenario: Scenario) -> BuiltScenario:
    from simulations.cluster import HOSTNAME_LABEL, PRIORITY_CLASSES, build_flavor, flavor_name
    from simulations.traces.openb import OPENB_TEAM, read_openb

    assert scenario.trace is not None
    trace = read_openb(scenario.trace)
    objects: list[Resource] = [build_topology((HOSTNAME_LABEL,))]
    objects.extend(build_flavor(model, TOPOLOGY_NAME) for model in sorted(trace.capacity_by_model))
    flavors = []
    for model in sorted(trace.capacity_by_model):
        totals = trace.capacity_by_model[model]
        flavors.append(
            {
                "name": flavor_name(model),
                "resources": [
                    {"name": "cpu", "nominalQuota": str(totals["cpu"])},
                    {"name": "memory", "nominalQuota": f"{totals['memory']}Gi"},
                    {"name": GPU_RESOURCE, "nominalQuota": str(totals[GPU_RESOURCE])},
                ],
            }
        )
    objects.append(
        ClusterQueue.model_validate(
            {
                "metadata": {"name": OPENB_TEAM},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU_RESOURCE], "flavors": flavors}],
                    "preemption": {"withinClusterQueue": "LowerPriority"},
                },
            }
        )
    )
    objects.append(
        LocalQueue.model_validate(
            {"metadata": {"name": LOCAL_QUEUE_NAME, "namespace": OPENB_TEAM}, "spec": {"clusterQueue": OPENB_TEAM}}
        )
    )
    objects.extend(
        WorkloadPriorityClass.model_validate({"metadata": {"name": name}, "value": value})
        for name, value in PRIORITY_CLASSES.items()
    )
    jobs = trace.jobs
    return BuiltScenario(
        scenario,
        objects,
        trace.nodes,
        trace.node_documents,
        (HOSTNAME_LABEL,),
        len(jobs),
        lambda _: iter(jobs),
        GPU_RESOURCE,
        trace.gpu_count,
        {OPENB_TEAM: trace.gpu_count},
        dict(trace.notes),
    )


def _build_kueue_perf(scenario: Scenario, perf: KueuePerfSpec) -> BuiltScenario:
    objects: list[Resource] = [ResourceFlavor.model_validate({"metadata": {"name": "default"}})]
    queues: list[str] = []
    for c in range(perf.cohorts):
        cohort = f"cohort-{c}"
        objects.append(Cohort.model_validate({"metadata": {"name": cohort}}))
        for q in range(perf.queues_per_cohort):
            name = f"{cohort}-cq-{q}"
            queues.append(name)
            objects.append(
                ClusterQueue.model_validate(
                    {
                        "metadata": {"name": name},
                        "spec": {
                            "cohortName": cohort,
                            "namespaceSelector": {},
                            "resourceGroups": [
                                {
                                    "coveredResources": ["cpu"],
                                    "flavors": [
                                        {
                                            "name": "default",
                                            "resources": [
                                                {
                                                    "name": "cpu",
                                                    "nominalQuota": str(perf.nominal_cpu),
                                                    "borrowingLimit": str(perf.borrowing_limit_cpu),
                                                }
                                            ],
                                        }
                                    ],
                                }
                            ],
                            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                        },
                    }
                )
            )
            objects.append(
                LocalQueue.model_validate(
                    {"metadata": {"name": LOCAL_QUEUE_NAME, "namespace": name}, "spec": {"clusterQueue": name}}
                )
            )
    for cls, _, _, _, priority, _ in perf.classes:
        objects.append(WorkloadPriorityClass.model_validate({"metadata": {"name": cls}, "value": priority}))
    per_queue = sum(count for _, count, *_ in perf.classes)

    def jobs(streams: RandomStreams) -> Iterator[JobSpec]:
        del streams  # the Kueue generator is deterministic
        # Kueue's runner creates each class's workloads at a fixed interval in every CQ.
        entries: list[JobSpec] = []
        for queue in queues:
            for cls, count, cpu, runtime, _priority, interval in perf.classes:
                for i in range(count):
                    entries.append(
                        JobSpec(
                            name=f"{cls}-{i}",
                            team=queue,
                            submit_time=i * interval,
                            nodes=1,
                            gpus_per_node=0,
                            duration=runtime,
                            priority_class=cls,
                            cpu_milli=cpu * 1000,
                            memory_mib=0,
                        )
                    )
        entries.sort(key=lambda job: job.submit_time)
        return iter(entries)

    nominal = dict.fromkeys(queues, perf.nominal_cpu)
    return BuiltScenario(
        scenario, objects, [], [], (), per_queue * len(queues), jobs, "cpu", perf.nominal_cpu * len(queues), nominal
    )


# ------------------------------------------------------------------------------ YAML files

_TOP_KEYS = {
    "name",
    "description",
    "cluster",
    "teams",
    "queueing",
    "workload",
    "trace",
    "waitForPodsReady",
    "failures",
    "stages",
    "sampleSeconds",
}
_CLUSTER_KEYS = {
    "zones": "zones",
    "spinesPerZone": "spines_per_zone",
    "blocksPerSpine": "blocks_per_spine",
    "nodesPerBlock": "nodes_per_block",
    "gpusPerNode": "gpus_per_node",
    "nvlinkNodes": "nvlink_nodes",
    "gpuModel": "gpu_model",
    "cpu": "cpu",
    "memoryGi": "memory_gi",
}
_WORKLOAD_KEYS = {
    "jobs": "jobs",
    "mix": "mix",
    "load": "load",
    "durationScale": "duration_scale",
    "topologyMode": "topology_mode",
    "topologyLevel": "topology_level",
    "highPriorityFraction": "high_priority_fraction",
    "maxDurationSeconds": "max_duration",
}


def _mapping(
    document: SourceDocument, path: FieldPath, value: Any, allowed: set[str] | dict[str, str]
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise document.error(path, f"must be a mapping, got {type(value).__name__}")
    for key in value:
        if key not in allowed:
            raise document.error((*path, key), f"unknown field; known fields are {', '.join(sorted(allowed))}")
    return value


def _typed(document: SourceDocument, path: FieldPath, value: Any, kind: type, minimum: float | None = None) -> Any:
    ok = isinstance(value, kind) and not isinstance(value, bool)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        raise document.error(
            path,
            f"must be {'an integer' if kind is int else 'a number' if kind is float else 'a ' + kind.__name__}, got {value!r}",
        )
    if minimum is not None and value < minimum:
        raise document.error(path, f"must be at least {minimum:g}, got {value}")
    return value


def load_scenario_file(path: str | Path) -> Scenario:
    documents = load_documents(path)
    if len(documents) != 1:
        raise SimulationInputError(str(path), None, "", f"expected one YAML document, found {len(documents)}")
    document = documents[0]
    data = _mapping(document, (), document.data, _TOP_KEYS)
    base = Path(path).resolve().parent
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise document.error(("name",), "a scenario needs a name")
    kwargs: dict[str, Any] = {"name": name, "description": str(data.get("description") or "")}

    if "cluster" in data:
        raw = _mapping(document, ("cluster",), data["cluster"], _CLUSTER_KEYS)
        values: dict[str, Any] = {}
        for key, attribute in _CLUSTER_KEYS.items():
            if key in raw:
                values[attribute] = (
                    raw[key] if key == "gpuModel" else _typed(document, ("cluster", key), raw[key], int, 1)
                )
        cluster = ClusterSpec(**values)
        problems = cluster.validate()
        if problems:
            raise document.error(("cluster",), "; ".join(problems))
        kwargs["cluster"] = cluster

    teams: list[TeamSpec] = []
    loads: list[TeamLoad] = []
    if "teams" in data:
        if not isinstance(data["teams"], list) or not data["teams"]:
            raise document.error(("teams",), "must be a non-empty list of teams")
        allowed = {"name", "share", "borrowingLimitShare", "weight", "arrivalWeight", "priorityClass"}
        for i, raw in enumerate(data["teams"]):
            team = _mapping(document, ("teams", i), raw, allowed)
            team_name = team.get("name")
            if not isinstance(team_name, str) or not team_name:
                raise document.error(("teams", i, "name"), "a team needs a name (its namespace)")
            share = _typed(document, ("teams", i, "share"), team.get("share", 0.0), float, 0)
            limit = team.get("borrowingLimitShare")
            if limit is not None:
                limit = _typed(document, ("teams", i, "borrowingLimitShare"), limit, float, 0)
            teams.append(
                TeamSpec(
                    team_name, share, limit, _typed(document, ("teams", i, "weight"), team.get("weight", 1.0), float, 0)
                )
            )
            loads.append(
                TeamLoad(
                    team_name,
                    _typed(document, ("teams", i, "arrivalWeight"), team.get("arrivalWeight", 1.0), float, 0),
                    team.get("priorityClass", "normal"),
                )
            )
        total = sum(t.share for t in teams)
        if total > 1.0 + 1e-9:
            raise document.error(("teams",), f"team shares add up to {total:g}; they must not exceed 1")
    queueing = _mapping(
        document, ("queueing",), data.get("queueing", {}), {"reclaimWithinCohort", "withinClusterQueue", "fairSharing"}
    )
    queue_kwargs: dict[str, Any] = {}
    if teams:
        queue_kwargs["teams"] = tuple(teams)
    for key, attribute, choices in (
        ("reclaimWithinCohort", "reclaim_within_cohort", ("Never", "LowerPriority", "Any")),
        ("withinClusterQueue", "within_cluster_queue", ("Never", "LowerPriority", "LowerOrNewerEqualPriority")),
    ):
        if key in queueing:
            if queueing[key] not in choices:
                raise document.error(("queueing", key), f"must be one of {', '.join(choices)}, got {queueing[key]!r}")
            queue_kwargs[attribute] = queueing[key]
    kwargs["queues"] = QueueSpec(**queue_kwargs)
    kwargs["fair_sharing"] = bool(queueing.get("fairSharing", False))

    if "workload" in data:
        raw = _mapping(document, ("workload",), data["workload"], _WORKLOAD_KEYS)
        values = {}
        for key, attribute in _WORKLOAD_KEYS.items():
            if key not in raw:
                continue
            value = raw[key]
            if key == "jobs":
                value = _typed(document, ("workload", key), value, int, 1)
            elif key == "mix":
                if value not in MIXES:
                    raise document.error(("workload", key), f"unknown mix {value!r}; use one of {', '.join(MIXES)}")
            elif key == "topologyMode":
                if value not in ("required", "preferred", "none", None):
                    raise document.error(("workload", key), f"must be required, preferred or none, got {value!r}")
                value = None if value in ("none", None) else value
            elif key == "topologyLevel":
                value = None if value is None else str(value)
            else:
                value = _typed(document, ("workload", key), value, float, 0)
            values[attribute] = value
        if loads:
            values["teams"] = tuple(loads)
        kwargs["workload"] = SyntheticWorkload(**values) if "jobs" in values else SyntheticWorkload(jobs=1000, **values)
    elif loads:
        kwargs["workload"] = SyntheticWorkload(jobs=1000, teams=tuple(loads))

    if "trace" in data:
        trace = base / str(data["trace"])
        if not trace.exists():
            raise document.error(("trace",), f"{trace} does not exist")
        kwargs["trace"] = trace
    if "waitForPodsReady" in data:
        raw = _mapping(document, ("waitForPodsReady",), data["waitForPodsReady"], {"timeoutSeconds"})
        kwargs["pods_ready_timeout"] = _typed(
            document, ("waitForPodsReady", "timeoutSeconds"), raw.get("timeoutSeconds", 1800), float, 1
        )
    if "failures" in data:
        raw = _mapping(document, ("failures",), data["failures"], {"nodeMtbfHours", "repairSeconds"})
        kwargs["failures"] = FailureSpec(
            _typed(document, ("failures", "nodeMtbfHours"), raw.get("nodeMtbfHours", 0), float, 0.001),
            _typed(document, ("failures", "repairSeconds"), raw.get("repairSeconds", 3600), float, 0),
        )
    if "stages" in data:
        stages = data["stages"] if isinstance(data["stages"], list) else [data["stages"]]
        paths = []
        for i, entry in enumerate(stages):
            stage_path = base / str(entry)
            if not stage_path.exists():
                raise document.error(
                    ("stages", i) if isinstance(data["stages"], list) else ("stages",), f"{stage_path} does not exist"
                )
            paths.append(stage_path)
        kwargs["stages"] = tuple(paths)
    if "sampleSeconds" in data:
        kwargs["sample_seconds"] = _typed(document, ("sampleSeconds",), data["sampleSeconds"], float, 0.001)
    return Scenario(**kwargs)


def resolve_scenario(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or a scenario file by path."""
    if name_or_path in BUILTIN:
        return BUILTIN[name_or_path]
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return load_scenario_file(path)
    raise SimulationInputError(
        name_or_path, None, "", f"no such scenario; built-in ones are {', '.join(BUILTIN)}, or give a YAML file"
    )


def with_trace(scenario: Scenario, trace: Path) -> Scenario:
    """The scenario replaying ``trace`` (a job CSV or the openb directory) instead of its workload."""
    if not trace.exists():
        raise SimulationInputError(str(trace), None, "", "no such trace file or directory")
    if trace.is_dir():
        return dataclasses.replace(
            scenario, name=f"trace:{trace.name}", trace=trace, workload=None, kueue_perf=None, cluster=None
        )
    return dataclasses.replace(scenario, name=f"trace:{trace.name}", trace=trace, workload=None, kueue_perf=None)
