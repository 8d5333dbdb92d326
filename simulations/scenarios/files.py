"""Scenario YAML files (schema in the package docstring), name resolution and trace substitution."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from simulations.cluster_spec import (
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
    "warmupSeconds",
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
    "arrivals": "arrivals",
    "diurnalAmplitude": "diurnal_amplitude",
    "horizonSeconds": "horizon",
}
_TEAM_KEYS = {
    "name",
    "share",
    "borrowingLimitShare",
    "weight",
    "arrivalWeight",
    "priorityClass",
    "mix",
    "durationScale",
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


def _mix(document: SourceDocument, path: FieldPath, value: Any) -> str:
    if value not in MIXES:
        raise document.error(path, f"unknown mix {value!r}; use one of {', '.join(MIXES)}")
    return str(value)


def _cluster(document: SourceDocument, raw_value: Any) -> ClusterSpec:
    raw = _mapping(document, ("cluster",), raw_value, _CLUSTER_KEYS)
    values: dict[str, Any] = {}
    for key, attribute in _CLUSTER_KEYS.items():
        if key in raw:
            values[attribute] = raw[key] if key == "gpuModel" else _typed(document, ("cluster", key), raw[key], int, 1)
    cluster = ClusterSpec(**values)
    problems = cluster.validate()
    if problems:
        raise document.error(("cluster",), "; ".join(problems))
    return cluster


def _teams(document: SourceDocument, raw_teams: Any) -> tuple[list[TeamSpec], list[TeamLoad]]:
    if not isinstance(raw_teams, list) or not raw_teams:
        raise document.error(("teams",), "must be a non-empty list of teams")
    teams: list[TeamSpec] = []
    loads: list[TeamLoad] = []
    for i, raw in enumerate(raw_teams):
        team = _mapping(document, ("teams", i), raw, _TEAM_KEYS)
        team_name = team.get("name")
        if not isinstance(team_name, str) or not team_name:
            raise document.error(("teams", i, "name"), "a team needs a name (its namespace)")
        share = _typed(document, ("teams", i, "share"), team.get("share", 0.0), float, 0)
        limit = team.get("borrowingLimitShare")
        if limit is not None:
            limit = _typed(document, ("teams", i, "borrowingLimitShare"), limit, float, 0)
        weight = _typed(document, ("teams", i, "weight"), team.get("weight", 1.0), float, 0)
        teams.append(TeamSpec(team_name, share, limit, weight))
        scale = team.get("durationScale")
        loads.append(
            TeamLoad(
                team_name,
                _typed(document, ("teams", i, "arrivalWeight"), team.get("arrivalWeight", 1.0), float, 0),
                team.get("priorityClass", "normal"),
                mix=_mix(document, ("teams", i, "mix"), team["mix"]) if "mix" in team else None,
                duration_scale=None
                if scale is None
                else _typed(document, ("teams", i, "durationScale"), scale, float, 0.001),
            )
        )
    total = sum(t.share for t in teams)
    if total > 1.0 + 1e-9:
        raise document.error(("teams",), f"team shares add up to {total:g}; they must not exceed 1")
    return teams, loads


def _queueing(document: SourceDocument, data: dict[str, Any], teams: list[TeamSpec]) -> tuple[QueueSpec, bool]:
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
    return QueueSpec(**queue_kwargs), bool(queueing.get("fairSharing", False))


def _workload_value(document: SourceDocument, key: str, value: Any) -> Any:
    path: FieldPath = ("workload", key)
    if key == "jobs":
        return _typed(document, path, value, int, 1)
    if key == "mix":
        return _mix(document, path, value)
    if key == "topologyMode":
        if value not in ("required", "preferred", "none", None):
            raise document.error(path, f"must be required, preferred or none, got {value!r}")
        return None if value in ("none", None) else value
    if key == "topologyLevel":
        return None if value is None else str(value)
    if key == "arrivals":
        if value not in ("poisson", "diurnal"):
            raise document.error(path, f"must be poisson or diurnal, got {value!r}")
        return value
    if key == "diurnalAmplitude":
        amplitude = _typed(document, path, value, float, 0)
        if amplitude >= 1:
            raise document.error(path, f"must be below 1 (the rate would reach zero), got {amplitude:g}")
        return amplitude
    if key == "horizonSeconds":
        return _typed(document, path, value, float, 1)
    return _typed(document, path, value, float, 0)


def _workload(document: SourceDocument, raw_value: Any, loads: list[TeamLoad]) -> SyntheticWorkload:
    raw = _mapping(document, ("workload",), raw_value, _WORKLOAD_KEYS)
    values = {_WORKLOAD_KEYS[key]: _workload_value(document, key, value) for key, value in raw.items()}
    if loads:
        values["teams"] = tuple(loads)
    if "jobs" not in values:
        # with a horizon the horizon ends the arrivals; without one, 1,000 jobs
        values["jobs"] = 1_000_000 if "horizon" in values else 1000
    return SyntheticWorkload(**values)


def _existing(document: SourceDocument, path: FieldPath, target: Path) -> Path:
    if not target.exists():
        raise document.error(path, f"{target} does not exist")
    return target


def _check_queue_objects(document: SourceDocument, scenario: Scenario) -> None:
    """The Kueue objects a file's teams become pass the shared check (``check_object``) that
    every other entry point uses; a refusal names the team that made the object."""
    from scheduler.api.checks import check_object
    from simulations.cluster_spec import build_queues, capacity_by_model

    cluster = scenario.cluster or ClusterSpec()
    team_index = {team.name: i for i, team in enumerate(scenario.queues.teams)}
    for obj in build_queues(scenario.queues, capacity_by_model(cluster)):
        check = check_object(obj.to_dict())
        if check.ok:
            continue
        index = team_index.get(obj.name) if obj.kind in ("ClusterQueue", "LocalQueue") else None
        if obj.kind == "LocalQueue":
            index = team_index.get(obj.namespace or "")
        path: FieldPath = ("teams", index) if index is not None else ("teams",)
        raise document.error(path, f"this team's {obj.kind} is refused: {check.message}")


def load_scenario_file(path: str | Path) -> Scenario:
    """A scenario file read and checked; errors name the file, line and field."""
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
        kwargs["cluster"] = _cluster(document, data["cluster"])
    teams, loads = _teams(document, data["teams"]) if "teams" in data else ([], [])
    kwargs["queues"], kwargs["fair_sharing"] = _queueing(document, data, teams)
    if "workload" in data:
        kwargs["workload"] = _workload(document, data["workload"], loads)
    elif loads:
        kwargs["workload"] = SyntheticWorkload(jobs=1000, teams=tuple(loads))
    if "trace" in data:
        kwargs["trace"] = _existing(document, ("trace",), base / str(data["trace"]))
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
        listed = isinstance(data["stages"], list)
        stages = data["stages"] if listed else [data["stages"]]
        kwargs["stages"] = tuple(
            _existing(document, ("stages", i) if listed else ("stages",), base / str(entry))
            for i, entry in enumerate(stages)
        )
    if "sampleSeconds" in data:
        kwargs["sample_seconds"] = _typed(document, ("sampleSeconds",), data["sampleSeconds"], float, 0.001)
    if "warmupSeconds" in data:
        kwargs["warmup_seconds"] = _typed(document, ("warmupSeconds",), data["warmupSeconds"], float, 0)
    scenario = Scenario(**kwargs)
    _check_queue_objects(document, scenario)
    return scenario


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
            scenario,
            name=f"trace:{trace.name}",
            trace=trace,
            workload=None,
            kueue_perf=None,
            cluster=None,
            warmup_seconds=0.0,
        )
    # a trace brings its own timeline: no warm-up carried over from the scenario's workload
    return dataclasses.replace(
        scenario, name=f"trace:{trace.name}", trace=trace, workload=None, kueue_perf=None, warmup_seconds=0.0
    )
