"""Scenario YAML files (schema in the package docstring), name resolution and trace substitution."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from simulations.cluster import (
    ClusterSpec,
    QueueSpec,
    TeamSpec,
)
from simulations.errors import SimulationInputError
from simulations.scenarios.catalogue import BUILTIN
from simulations.scenarios.spec import FailureSpec, Scenario
from simulations.workloads import MIXES, SyntheticWorkload, TeamLoad
from simulations.yamlsource import FieldPath, SourceDocument, load_documents

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
