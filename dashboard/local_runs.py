"""Local runs (`trainyard run --local`) as the dashboard shows them, read from the local job store.

Each run's directory holds its TrainJob with a status the launcher keeps current, and its logs
with one ``[node-N/rank-M] ...`` prefix per line (``runtimes.local.store``). A rank's log is
its lines of ``logs/all.log``; the training metrics chart is the trainer's metrics lines
(``runtimes.examples.metrics``) in the order they were printed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtimes.examples.metrics import parse_metrics_line
from runtimes.local import LocalJobStore, LocalRunError
from runtimes.local.store import JobDirectory, condition_of, terminal_condition

LAUNCHER_LABEL = "launcher"
GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class LocalRun:
    name: str
    trainjob: dict[str, Any]
    directory: JobDirectory

    @property
    def status(self) -> str:
        ended = terminal_condition(self.trainjob)
        if ended is not None:
            return str(ended["type"])
        if condition_of(self.trainjob, "Running") is not None:
            return "Running"
        return "Created"

    @property
    def conditions(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (self.trainjob.get("status") or {}).get("conditions") or []
        return found

    @property
    def started(self) -> str | None:
        """When the run was created (its first condition), RFC 3339."""
        times = [str(c["lastTransitionTime"]) for c in self.conditions if c.get("lastTransitionTime")]
        return min(times) if times else None

    @property
    def nodes(self) -> int:
        trainer = (self.trainjob.get("spec") or {}).get("trainer") or {}
        return int(trainer.get("numNodes") or 1)

    @property
    def gpus(self) -> int:
        trainer = (self.trainjob.get("spec") or {}).get("trainer") or {}
        requests = (trainer.get("resourcesPerNode") or {}).get("limits") or {}
        try:
            return int(requests.get(GPU, 0)) * self.nodes
        except ValueError:
            return 0


def read_runs(store: LocalJobStore) -> list[LocalRun]:
    """Every run in the store; a directory whose trainjob.json is being replaced is skipped."""
    runs = []
    for name in store.names():
        try:
            runs.append(LocalRun(name, store.get(name), store.job(name)))
        except (LocalRunError, ValueError, OSError):
            continue  # written between the listing and the read: the next refresh shows it
    return runs


def read_run(store: LocalJobStore, name: str) -> LocalRun | None:
    try:
        return LocalRun(name, store.get(name), store.job(name))
    except (LocalRunError, ValueError, OSError):
        return None


def split_label(line: str) -> tuple[str, str]:
    """``[node-0/rank-1] text`` -> (``node-0/rank-1``, ``text``); a line without a label is the launcher's."""
    if line.startswith("[") and "] " in line:
        label, _, text = line[1:].partition("] ")
        return label, text
    return LAUNCHER_LABEL, line


def read_log(run: LocalRun) -> tuple[list[str], int]:
    """The run's combined log as complete lines, and the byte offset where following resumes."""
    try:
        data = run.directory.log_file(None).read_bytes()
    except FileNotFoundError:
        return [], 0
    end = data.rfind(b"\n") + 1  # a line still being written is followed, not shown half
    return data[:end].decode("utf-8", "replace").splitlines(), end


def _all_lines(run: LocalRun) -> list[str]:
    return read_log(run)[0]


def ranks(run: LocalRun) -> list[str]:
    """The labels that wrote to the log (node-N/rank-M, initializers, the launcher), in first-seen order."""
    seen: dict[str, None] = {}
    for line in _all_lines(run):
        seen.setdefault(split_label(line)[0], None)
    return list(seen)


def rank_lines(run: LocalRun, rank: str, limit: int = 2000) -> tuple[list[str], int]:
    """The last ``limit`` lines of ``rank`` and the offset to follow the log from."""
    lines, end = read_log(run)
    return [text for label, text in map(split_label, lines) if label == rank][-limit:], end


def metrics_series(run: LocalRun) -> list[dict[str, Any]]:
    """Every metrics report of the run's first rank that reported, in order."""
    reports: list[dict[str, Any]] = []
    reporter: str | None = None
    for label, text in map(split_label, _all_lines(run)):
        values = parse_metrics_line(text)
        if values is None or (reporter is not None and label != reporter):
            continue
        reporter = label
        reports.append(values)
    return reports


async def follow_rank(path: Path, rank: str, start: int, poll_seconds: float = 0.25) -> AsyncIterator[str]:
    """New lines of ``rank`` in the growing log at ``path``, from byte ``start`` on, until cancelled."""
    position = start
    while True:
        if path.is_file():
            with path.open("rb") as handle:
                handle.seek(position)
                chunk = handle.read()
            end = chunk.rfind(b"\n") + 1  # whole lines only: the rest is read again next time
            position += end
            for line in chunk[:end].decode("utf-8", "replace").splitlines():
                label, text = split_label(line)
                if label == rank:
                    yield text
        await asyncio.sleep(poll_seconds)
