"""The local launcher: run a rendered TrainJob's pods as processes on this machine.

One attempt runs the initializer jobs (dataset, then model) and then every rank of the
trainer job as one gang. When a process fails, the gang is stopped and the failure goes
through the Job's podFailurePolicy and the JobSet's failurePolicy (:mod:`runtimes.local.policy`):
the next attempt restarts everything, or the TrainJob ends Failed with the JobSet's reason.
The TrainJob status (conditions, jobsStatus, trainerStatus) is kept current in the job
directory throughout; SIGINT/SIGTERM stop every rank and leave the job Failed, reason
``Stopped``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from runtimes.examples.metrics import parse_metrics_line
from runtimes.local.devices import CUDA_VISIBLE_DEVICES, Device, describe_devices, node_visible_devices
from runtimes.local.initializer import TARGET_ENV
from runtimes.local.plan import ContainerPlan, LocalPlan, PodContext, resolve_env
from runtimes.local.policy import RankExit, decide
from runtimes.local.processes import run_gang
from runtimes.local.store import JobDirectory, StatusRecorder
from runtimes.local.torchrun import ProcessSpec, node_processes

Echo = Callable[[str], None]

STORAGE_URI_ENV = "STORAGE_URI"

REASON_STOPPED = "Stopped"


def free_port() -> int:
    """A free TCP port on loopback for the rendezvous (what torchrun does for --standalone)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def format_metrics(values: Mapping[str, Any]) -> str:
    """A metrics line as a person reads it: ``step 5/30 loss=0.42 samples/s=812.0 progress=16%``."""
    parts = []
    if "step" in values:
        total = values.get("total_steps")
        parts.append(f"step {values['step']}" + (f"/{total}" if total is not None else ""))
    labels = {
        "samples_per_second": "samples/s",
        "progress_percentage": "progress",
        "estimated_remaining_seconds": "eta",
    }
    units = {"progress_percentage": "%", "estimated_remaining_seconds": "s"}
    first = ("loss", "samples_per_second", "progress_percentage", "estimated_remaining_seconds")
    keys = [k for k in first if k in values] + [
        k for k in values if k not in first and k not in ("step", "total_steps")
    ]
    parts.extend(f"{labels.get(k, k)}={values[k]}{units.get(k, '')}" for k in keys)
    return " ".join(parts)


@dataclass(frozen=True)
class LaunchOptions:
    """How a local run is launched. ``device``: ``auto`` gives each node the GPUs its container asks
    for (``nvidia.com/gpu``), ``cpu`` hides every GPU from every process, ``cuda`` requires GPUs
    (:mod:`runtimes.local.devices`)."""

    grace_seconds: float = 5.0
    cwd: str | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)
    handle_signals: bool = True
    status_interval: float = 1.0
    device: Device = "auto"


@dataclass(frozen=True)
class LocalRunResult:
    succeeded: bool
    reason: str
    message: str
    restarts: int
    trainjob: dict[str, Any]


def plan_visible_devices(plan: LocalPlan, options: LaunchOptions) -> tuple[str | None, ...]:
    """Each trainer node's ``CUDA_VISIBLE_DEVICES`` for a run with ``options`` on this machine
    (None: left as inherited). Raises LocalRunError when the machine has too few GPUs, or when the
    trainer's processes cannot be built with these devices (numProcPerNode ``gpu`` without GPUs):
    callers check before they touch the job directory."""
    visible = node_visible_devices(plan, options.device, {**os.environ, **options.extra_env})
    node_processes(plan, 0, {}, options.cwd, visible)  # a dry run: only its refusals matter
    return visible


class _Logs:
    """Rank-prefixed output: to the console, to the step's log file and to the combined log."""

    def __init__(self, job: JobDirectory, echo: Echo | None, recorder: StatusRecorder) -> None:
        self.job = job
        self.echo = echo
        self.recorder = recorder
        self.files: dict[str | None, IO[str]] = {}
        self.last_line: dict[str, str] = {}

    def _file(self, step: str | None) -> IO[str]:
        if step not in self.files:
            self.files[step] = self.job.log_file(step).open("a", buffering=1)
        return self.files[step]

    def line(self, spec: ProcessSpec, text: str) -> None:
        prefixed = f"[{spec.label}] {text}"
        if text.strip():
            self.last_line[spec.label] = text.strip()[-300:]
        self._file(spec.step).write(prefixed + "\n")
        self._file(None).write(prefixed + "\n")
        metrics = parse_metrics_line(text)
        if metrics is not None:
            self.recorder.metrics(metrics)
            prefixed = f"[{spec.label}] {format_metrics(metrics)}"
        if self.echo is not None:
            self.echo(prefixed)

    def note(self, text: str) -> None:
        self._file(None).write(f"[launcher] {text}\n")
        if self.echo is not None:
            self.echo(f"[launcher] {text}")

    def close(self) -> None:
        for handle in self.files.values():
            handle.close()
        self.files.clear()


class LocalLauncher:
    """Runs one planned TrainJob to completion (or failure) in ``job``'s directory."""

    def __init__(
        self,
        plan: LocalPlan,
        job: JobDirectory,
        trainjob: dict[str, Any],
        options: LaunchOptions | None = None,
        echo: Echo | None = print,
    ) -> None:
        self.plan = plan
        self.job = job
        self.options = options or LaunchOptions()
        # Before the job directory exists: a job this machine cannot give its GPUs is refused first.
        self.visible_devices = plan_visible_devices(plan, self.options)
        job.create()
        self.recorder = StatusRecorder(job, trainjob, self.options.status_interval)
        self.logs = _Logs(job, echo, self.recorder)
        self._stop_signal: str | None = None

    def _base_env(self, attempt: int) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "PYTHONUNBUFFERED": "1",
                "TRAINYARD_JOB_NAME": self.plan.name,
                "TRAINYARD_RESTART_ATTEMPT": str(attempt),
                "TRAINYARD_OUTPUT_DIR": str(self.job.output),
                "TRAINYARD_WORKSPACE": str(self.job.workspace),
            }
        )
        env.update(self.options.extra_env)
        if self.options.device == "cpu":
            env[CUDA_VISIBLE_DEVICES] = ""  # initializers too: nothing of this run touches a GPU
        return env

    def _initializer_spec(self, init: ContainerPlan, attempt: int) -> ProcessSpec:
        env = self._base_env(attempt)
        env.update(
            resolve_env(self.plan, init, PodContext(self.plan.name, self.plan.namespace, init.replicated_job, 0))
        )
        target = "dataset" if init.container == "dataset-initializer" else "model"
        env[TARGET_ENV] = str(self.job.workspace / target)
        command = (sys.executable, "-m", "runtimes.local.initializer")
        return ProcessSpec(init.replicated_job, init.replicated_job, command, env, self.options.cwd)

    def _explained(self, failure: RankExit | None) -> RankExit | None:
        if failure is None:
            return None
        return dataclasses.replace(failure, detail=self.logs.last_line.get(failure.label, ""))

    async def _attempt(self, attempt: int) -> tuple[RankExit | None, ContainerPlan]:
        for init in self.plan.initializers:
            if not init.env_value(STORAGE_URI_ENV):
                # Nothing to load: the TrainJob sets no storageUri for this initializer.
                self.recorder.job_status(init.replicated_job, succeeded=1)
                continue
            self.recorder.job_status(init.replicated_job, active=1)
            outcome = await run_gang(
                [self._initializer_spec(init, attempt)],
                self.logs.line,
                init.replicated_job,
                init.container,
                self.options.grace_seconds,
            )
            failed = self._explained(outcome.first_failure)
            self.recorder.job_status(init.replicated_job, succeeded=int(failed is None), failed=int(failed is not None))
            if failed is not None:
                return failed, init
        trainer = self.plan.trainer
        specs = node_processes(self.plan, free_port(), self._base_env(attempt), self.options.cwd, self.visible_devices)
        shape = f"{trainer.parallelism} node(s), {len(specs)} process(es)"

        def started() -> None:
            self.recorder.job_status(trainer.replicated_job, active=trainer.parallelism)
            self.recorder.condition("Running", True, "Running", f"{shape} running (attempt {attempt})")

        outcome = await run_gang(
            specs, self.logs.line, trainer.replicated_job, trainer.container, self.options.grace_seconds, started
        )
        failed = self._explained(outcome.first_failure)
        self.recorder.job_status(
            trainer.replicated_job,
            succeeded=trainer.parallelism if failed is None else 0,
            failed=0 if failed is None else 1,
        )
        return failed, trainer

    def _install_signals(self, task: asyncio.Task[Any]) -> list[int]:
        if not self.options.handle_signals or threading.current_thread() is not threading.main_thread():
            return []
        loop = asyncio.get_running_loop()
        installed: list[int] = []

        def stop(signum: int) -> None:
            if self._stop_signal is None:
                self._stop_signal = signal.Signals(signum).name
                task.cancel()

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop, signum)
            installed.append(signum)
        return installed

    async def run(self) -> LocalRunResult:
        task = asyncio.current_task()
        assert task is not None
        recorder = self.recorder
        recorder.annotate("workdir", str(self.job.path))
        recorder.annotate("pid", str(os.getpid()))
        recorder.condition("Created", True, "Created", "TrainJob rendered; running locally")
        if devices := describe_devices(self.visible_devices, self.plan.trainer.replicated_job):
            self.logs.note(devices)
        installed = self._install_signals(task)
        restarts = counted = 0
        try:
            while True:
                failure, step = await self._attempt(restarts)
                if failure is None:
                    return self._finish(True, "AllJobsCompleted", "jobset completed successfully", restarts)
                decision = decide(failure, step.pod_failure_rules, self.plan.failure_policy, counted)
                if not decision.restart:
                    return self._finish(False, decision.reason, decision.message, restarts)
                restarts += 1
                counted += int(decision.counts_towards_max)
                recorder.annotate("restarts", str(restarts))
                recorder.annotate("restarts-count-towards-max", str(counted))
                recorder.condition("Running", False, decision.reason, decision.message)
                self.logs.note(f"restarting all ranks: {decision.message}")
        except asyncio.CancelledError:
            if self._stop_signal is None:
                raise
            task.uncancel()
            message = f"stopped by {self._stop_signal}: every rank was terminated"
            return self._finish(False, REASON_STOPPED, message, restarts)
        finally:
            loop = asyncio.get_running_loop()
            for signum in installed:
                loop.remove_signal_handler(signum)
            with contextlib.suppress(OSError):
                recorder.flush()
            self.logs.close()

    def _finish(self, succeeded: bool, reason: str, message: str, restarts: int) -> LocalRunResult:
        recorder = self.recorder
        recorder.condition("Running", False, "Completed" if succeeded else "Failed", message)
        recorder.condition("Complete" if succeeded else "Failed", True, reason, message)
        recorder.flush()
        self.logs.note(("Complete" if succeeded else "Failed") + f" ({reason}): {message}")
        return LocalRunResult(succeeded, reason, message, restarts, recorder.trainjob)
