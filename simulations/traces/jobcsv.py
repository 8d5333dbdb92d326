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
from collections.abc import Sequence
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
        _check_header(name, header)
        jobs: list[JobSpec] = []
        for row in reader:
            if None in row:  # csv puts surplus values under the key None
                raise SimulationInputError(name, reader.line_num, "", f"more values than the {len(header)} columns")
            read = _JobRow(name, reader.line_num, row)
            jobs.append(read.job(f"job-{len(jobs):06d}", priority_classes))
    if not jobs:
        raise SimulationInputError(name, 2, "", "the trace has a header but no jobs")
    jobs.sort(key=lambda job: job.submit_time)
    return jobs


def _check_header(name: str, header: Sequence[str]) -> None:
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


class _JobRow:
    """One row of the CSV, read column by column; errors name the file, line and column."""

    def __init__(self, name: str, line: int, row: dict[str, str]) -> None:
        self.name, self.line, self.row = name, line, row

    def text(self, column: str) -> str:
        return (self.row.get(column) or "").strip()

    def number(self, column: str, kind: type[float] | type[int], minimum: float, strict: bool = False) -> float:
        text = self.text(column)
        try:
            value = kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise SimulationInputError(self.name, self.line, column, f"{text!r} is not {what}") from None
        if value < minimum or (strict and value == minimum) or value != value:
            bound = f"greater than {minimum:g}" if strict else f"at least {minimum:g}"
            raise SimulationInputError(self.name, self.line, column, f"must be {bound}, got {text}")
        return value

    def job(self, job_name: str, priority_classes: tuple[str, ...]) -> JobSpec:
        submit = self.number("submit_time", float, 0)
        nodes = int(self.number("nodes", int, 1))
        gpus = int(self.number("gpus_per_node", int, 0))
        duration = self.number("duration", float, 0, strict=True)
        team = self.text("team")
        if not _DNS_LABEL.match(team):
            raise SimulationInputError(
                self.name, self.line, "team", f"{team!r} is not a namespace name (lowercase DNS label)"
            )
        priority = self.text("priority") or None
        if priority is not None and priority not in priority_classes:
            raise SimulationInputError(
                self.name,
                self.line,
                "priority",
                f"unknown priority class {priority!r}; use one of {', '.join(priority_classes)} or leave empty",
            )
        cpu = int(self.number("cpu_milli", int, 1)) if self.text("cpu_milli") else (16000 * gpus or 4000)
        memory = int(self.number("memory_mib", int, 1)) if self.text("memory_mib") else (131072 * gpus or 16384)
        mode, level = self.topology()
        return JobSpec(
            name=job_name,
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

    def topology(self) -> tuple[str | None, str | None]:
        topology = self.text("topology")
        if not topology:
            return None, None
        mode, _, level = topology.partition(":")
        if mode not in ("required", "preferred") or not level:
            raise SimulationInputError(
                self.name, self.line, "topology", f"{topology!r} must be required:LEVEL or preferred:LEVEL"
            )
        return mode, level
