"""Where local TrainJobs live on disk, and how their status is written and read back.

One directory per job (``<root>/jobs/<name>/`` by default, or the ``--workdir`` of
`trainyard run`)::

    trainjob.json      the TrainJob as submitted, with its status (conditions, jobsStatus,
                       trainerStatus) kept current by the launcher; written atomically
    logs/<step>.log    output of one step (dataset-initializer, node-0, node-1, ...), rank-prefixed
    logs/all.log       every step's output, in arrival order
    workspace/         what the initializers loaded (dataset/, model/)
    output/            checkpoints and the final model ($TRAINYARD_OUTPUT_DIR of the ranks)
    launcher.pid       the launcher process of a detached run (SDK), while it runs
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runtimes.examples.metrics import PROGRESS_KEY, REMAINING_KEY
from runtimes.local.errors import LocalRunError

HOME_ENV = "TRAINYARD_HOME"
LOCAL_ANNOTATION_PREFIX = "local.trainyard.dev/"
TERMINAL_CONDITIONS = ("Complete", "Failed")


def default_root() -> Path:
    """``$TRAINYARD_HOME`` or ``~/.trainyard``: the root of the local job store."""
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".trainyard")


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class JobDirectory:
    path: Path

    @property
    def trainjob_file(self) -> Path:
        return self.path / "trainjob.json"

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    @property
    def workspace(self) -> Path:
        return self.path / "workspace"

    @property
    def output(self) -> Path:
        return self.path / "output"

    @property
    def pid_file(self) -> Path:
        return self.path / "launcher.pid"

    def log_file(self, step: str | None) -> Path:
        return self.logs / f"{step or 'all'}.log"

    def create(self) -> None:
        for directory in (self.path, self.logs, self.workspace, self.output):
            directory.mkdir(parents=True, exist_ok=True)

    def reset(self) -> None:
        """Make the directory ready for a fresh run, removing only what a previous run wrote.

        Refuses a non-empty directory that is not a job directory, so a mistyped ``--workdir``
        never loses anyone's files.
        """
        if self.path.is_dir() and any(self.path.iterdir()) and not self.trainjob_file.is_file():
            raise LocalRunError(
                f"{self.path} is not empty and holds no trainjob.json: choose an empty or new --workdir"
            )
        if self.pid_file.is_file() and _alive(self.pid_file):
            raise LocalRunError(f"a local run is still active in {self.path}; stop it or pick another --workdir")
        for directory in (self.logs, self.workspace, self.output):
            shutil.rmtree(directory, ignore_errors=True)
        for file in (self.trainjob_file, self.pid_file):
            file.unlink(missing_ok=True)
        self.create()

    def read_trainjob(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.trainjob_file.read_text())
        except FileNotFoundError:
            raise LocalRunError(f"no local TrainJob in {self.path}") from None
        return data

    def write_trainjob(self, trainjob: dict[str, Any]) -> None:
        partial = self.trainjob_file.with_name(self.trainjob_file.name + ".partial")
        partial.write_text(json.dumps(trainjob, indent=2))
        partial.replace(self.trainjob_file)  # readers never see half a file


class LocalJobStore:
    """The local jobs under one root: list, open, delete."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()

    @property
    def jobs_dir(self) -> Path:
        return self.root / "jobs"

    def job(self, name: str) -> JobDirectory:
        return JobDirectory(self.jobs_dir / name)

    def names(self) -> list[str]:
        if not self.jobs_dir.is_dir():
            return []
        return sorted(p.name for p in self.jobs_dir.iterdir() if (p / "trainjob.json").is_file())

    def get(self, name: str) -> dict[str, Any]:
        job = self.job(name)
        if not job.trainjob_file.is_file():
            raise LocalRunError(f"TrainJob {name!r} not found in the local store {self.jobs_dir}")
        return job.read_trainjob()

    def delete(self, name: str, grace_seconds: float = 5.0) -> None:
        """Stop the job's launcher (which stops every rank) and remove its directory."""
        job = self.job(name)
        if not job.path.is_dir():
            raise LocalRunError(f"TrainJob {name!r} not found in the local store {self.jobs_dir}")
        stop_launcher(job, grace_seconds)
        shutil.rmtree(job.path, ignore_errors=True)


def _alive(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text().strip()), 0)
    except (ValueError, ProcessLookupError, PermissionError, FileNotFoundError):
        return False
    return True


def stop_launcher(job: JobDirectory, grace_seconds: float) -> None:
    """SIGTERM a detached launcher (it stops its ranks) and wait for it to go, SIGKILL after grace."""
    try:
        pid = int(job.pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_seconds
        while time.monotonic() < deadline:
            os.killpg(pid, 0)
            time.sleep(0.05)
        os.killpg(pid, signal.SIGKILL)


def condition_of(trainjob: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in (trainjob.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            found: dict[str, Any] = condition
            return found
    return None


def terminal_condition(trainjob: dict[str, Any]) -> dict[str, Any] | None:
    for kind in TERMINAL_CONDITIONS:
        found = condition_of(trainjob, kind)
        if found is not None:
            return found
    return None


class StatusRecorder:
    """Keeps a TrainJob's status current in its job directory.

    Conditions follow the local life of the job: Created, Running (True while ranks run),
    then Complete or Failed with the JobSet's reason and message. ``trainerStatus`` carries the
    latest metrics the trainer reported. Metric updates are written at most every
    ``min_interval`` seconds; condition changes are written at once.
    """

    def __init__(self, job: JobDirectory, trainjob: dict[str, Any], min_interval: float = 1.0) -> None:
        self.job = job
        self.trainjob = trainjob
        self.min_interval = min_interval
        self._last_write = 0.0
        self._dirty = False
        status = trainjob.setdefault("status", {})
        status["conditions"] = []
        status.pop("trainerStatus", None)
        status["jobsStatus"] = []

    @property
    def status(self) -> dict[str, Any]:
        status: dict[str, Any] = self.trainjob["status"]
        return status

    def annotate(self, key: str, value: str) -> None:
        metadata = self.trainjob.setdefault("metadata", {})
        metadata.setdefault("annotations", {})[LOCAL_ANNOTATION_PREFIX + key] = value
        self._dirty = True

    def condition(self, kind: str, status: bool, reason: str, message: str) -> None:
        conditions: list[dict[str, Any]] = self.status["conditions"]
        value = "True" if status else "False"
        existing = next((c for c in conditions if c["type"] == kind), None)
        if existing is not None and (existing["status"], existing["reason"], existing["message"]) == (
            value,
            reason,
            message,
        ):
            return
        entry = {
            "type": kind,
            "status": value,
            "reason": reason,
            "message": message,
            "lastTransitionTime": now_rfc3339(),
        }
        if existing is None:
            conditions.append(entry)
        else:
            existing.update(entry)
        self.write()

    def job_status(self, name: str, *, active: int = 0, succeeded: int = 0, failed: int = 0) -> None:
        jobs: list[dict[str, Any]] = self.status["jobsStatus"]
        entry = {
            "name": name,
            "ready": active,
            "succeeded": succeeded,
            "failed": failed,
            "active": active,
            "suspended": 0,
        }
        for index, existing in enumerate(jobs):
            if existing["name"] == name:
                jobs[index] = entry
                break
        else:
            jobs.append(entry)
        self._dirty = True

    def metrics(self, values: dict[str, Any]) -> None:
        trainer_status: dict[str, Any] = {}
        if PROGRESS_KEY in values:
            trainer_status["progressPercentage"] = max(0, min(100, int(values[PROGRESS_KEY])))
        if REMAINING_KEY in values:
            trainer_status["estimatedRemainingSeconds"] = max(0, int(values[REMAINING_KEY]))
        trainer_status["metrics"] = [
            {"name": name, "value": str(value)}
            for name, value in values.items()
            if name not in (PROGRESS_KEY, REMAINING_KEY)
        ]
        trainer_status["lastUpdatedTime"] = now_rfc3339()
        self.status["trainerStatus"] = trainer_status
        self._dirty = True
        if time.monotonic() - self._last_write >= self.min_interval:
            self.write()

    def write(self) -> None:
        self.job.write_trainjob(self.trainjob)
        self._last_write = time.monotonic()
        self._dirty = False

    def flush(self) -> None:
        if self._dirty:
            self.write()


def follow_lines(path: Path, done: Iterator[bool] | None = None, poll_seconds: float = 0.2) -> Iterator[str]:
    """Lines of a growing log file; stops at EOF once ``done`` yields True (or at EOF if no ``done``)."""
    position = 0
    pending = ""
    while True:
        finished = next(done) if done is not None else True
        if path.is_file():
            with path.open("r", errors="replace") as handle:
                handle.seek(position)
                chunk = handle.read()
                position = handle.tell()
            pending += chunk
            *lines, pending = pending.split("\n")
            yield from lines
        if finished:
            if pending:
                yield pending
            return
        time.sleep(poll_seconds)
