"""trainyard's job trace format: one CSV row per TrainJob.

Columns (header row required, in any order; the last three are optional)::

    submit_time     seconds from the start of the run (float, ≥ 0, rows in any order)
    team            namespace of the team's LocalQueue (a DNS label, e.g. team-a)
    nodes           pods in the gang (integer ≥ 1)
    gpus_per_node   GPUs per pod (integer ≥ 0)
    duration        seconds of training once every pod runs (float > 0)
    priority        WorkloadPriorityClass name (low | normal | high, or empty for none)
    cpu_milli       CPU per pod in millicores (default 16000 per GPU, 4000 without GPUs)
    memory_mib      memory per pod in MiB (default 131072 per GPU, 16384 without GPUs)
    topology        required:LEVEL or preferred:LEVEL (a Topology level label), or empty

Example::

    submit_time,team,nodes,gpus_per_node,duration,priority
    0,team-a,4,8,3600,normal
    12.5,team-b,1,1,600,low
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from simulations.errors import SimulationInputError
from simulations.workloads import JobSpec

JOB_CSV_COLUMNS = ("submit_time", "team", "nodes", "gpus_per_node", "duration", "priority")
OPTIONAL_COLUMNS = ("cpu_milli", "memory_mib", "topology")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def read_job_csv(path: str | Path, priority_classes: tuple[str, ...] = ("low", "normal", "high")) -> list[JobSpec]:
    """Every row as a JobSpec, sorted by submit time (stable: ties keep file order)."""
    name = str(path)
    try:
        handle = open(path, newline="")  # noqa: SIM115 - closed below, errors need the name
    except OSError as error:
        raise SimulationInputError(name, None, "", f"cannot read file: {error.strerror}") from None
    with handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [c for c in JOB_CSV_COLUMNS if c not in header]
        if missing:
            raise SimulationInputError(
                name,
                1,
                missing[0],
                f"missing column(s) {', '.join(missing)}; the header must have {','.join(JOB_CSV_COLUMNS)}",
            )
        unknown = [c for c in header if c not in JOB_CSV_COLUMNS + OPTIONAL_COLUMNS]
        if unknown:
            raise SimulationInputError(
                name, 1, unknown[0], f"unknown column; known are {', '.join(JOB_CSV_COLUMNS + OPTIONAL_COLUMNS)}"
            )
        jobs: list[JobSpec] = []
        for row in reader:
            line = reader.line_num
            if None in row:  # csv puts surplus values under the key None
                raise SimulationInputError(name, line, "", f"more values than the {len(header)} columns")

            def number(column: str, kind: type[float] | type[int], minimum: float, strict: bool = False) -> float:
                text = (row.get(column) or "").strip()  # noqa: B023 - used at once
                try:
                    value = kind(text)
                except ValueError:
                    what = "an integer" if kind is int else "a number"
                    raise SimulationInputError(name, line, column, f"{text!r} is not {what}") from None  # noqa: B023
                if value < minimum or (strict and value == minimum) or value != value:
                    bound = f"greater than {minimum:g}" if strict else f"at least {minimum:g}"
                    raise SimulationInputError(name, line, column, f"must be {bound}, got {text}")  # noqa: B023
                return value

            submit = number("submit_time", float, 0)
            nodes = int(number("nodes", int, 1))
            gpus = int(number("gpus_per_node", int, 0))
            duration = number("duration", float, 0, strict=True)
            team = (row.get("team") or "").strip()
            if not _DNS_LABEL.match(team):
                raise SimulationInputError(
                    name, line, "team", f"{team!r} is not a namespace name (lowercase DNS label)"
                )
            priority = (row.get("priority") or "").strip() or None
            if priority is not None and priority not in priority_classes:
                raise SimulationInputError(
                    name,
                    line,
                    "priority",
                    f"unknown priority class {priority!r}; use one of {', '.join(priority_classes)} or leave empty",
                )
            cpu = int(number("cpu_milli", int, 1)) if (row.get("cpu_milli") or "").strip() else (16000 * gpus or 4000)
            memory = (
                int(number("memory_mib", int, 1)) if (row.get("memory_mib") or "").strip() else (131072 * gpus or 16384)
            )
            mode = level = None
            topology = (row.get("topology") or "").strip()
            if topology:
                mode, _, level = topology.partition(":")
                if mode not in ("required", "preferred") or not level:
                    raise SimulationInputError(
                        name, line, "topology", f"{topology!r} must be required:LEVEL or preferred:LEVEL"
                    )
            jobs.append(
                JobSpec(
                    name=f"job-{len(jobs):06d}",
                    team=team,
                    submit_time=submit,
                    nodes=nodes,
                    gpus_per_node=gpus,
                    duration=duration,
                    priority_class=priority,
                    cpu_milli=cpu,
                    memory_mib=memory,
                    topology_mode=mode,
                    topology_level=level,
                )
            )
    if not jobs:
        raise SimulationInputError(name, 2, "", "the trace has a header but no jobs")
    jobs.sort(key=lambda job: job.submit_time)
    return jobs
