"""The local backend: TrainJobs run on this machine through the local launcher.

``train`` validates by rendering in the caller's process (a bad job raises at once, naming the
field), writes the function's entrypoint and the TrainJob + runtime into the job directory,
and starts ``python -m runtimes.local`` detached in its own session. Status, logs and outputs
live in the local job store (``$TRAINYARD_HOME/jobs/<name>``), so ``list_jobs``/``get_job`` also
see jobs started by ``trainyard run --local``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from runtimes.api.trainer import FRAMEWORK_LABEL, AnyTrainingRuntime
from runtimes.api.trainer import TrainJob as TrainJobModel
from runtimes.local.devices import Device, device_choice
from runtimes.local.errors import LocalRunError
from runtimes.local.launcher import LaunchOptions, plan_visible_devices
from runtimes.local.run import builtin_runtimes, load_runtimes, plan_trainjob
from runtimes.local.store import LocalJobStore, condition_of, follow_lines, terminal_condition
from runtimes.sdk.backend import wait_for_status
from runtimes.sdk.trainjobs import build_trainjob, entrypoint_source, new_job_name
from runtimes.sdk.types import (
    BuiltinTrainer,
    CustomTrainer,
    Initializer,
    Runtime,
    RuntimeTrainer,
    Step,
    TrainJob,
)

DEFAULT_RUNTIME = "torch-distributed"


@dataclass
class LocalBackendConfig:
    """``root``: the job store (default ``$TRAINYARD_HOME`` or ``~/.trainyard``);
    ``runtime_files``: extra runtime YAML files or directories besides the built-in ones;
    ``device``: ``trainyard run --local --device`` (auto: GPUs for jobs that ask for them)."""

    root: Path | str | None = None
    runtime_files: list[Path] = field(default_factory=list)
    namespace: str = "default"
    device: Device = "auto"


def _runtime_view(runtime: AnyTrainingRuntime) -> Runtime:
    framework = runtime.metadata.labels.get(FRAMEWORK_LABEL, "unknown")
    policy = runtime.spec.ml_policy
    trainer_type = "BuiltinTrainer" if framework == "torchtune" else "CustomTrainer"
    return Runtime(
        name=runtime.metadata.name,
        trainer=RuntimeTrainer(
            trainer_type=trainer_type,
            framework=framework,
            num_nodes=(policy.num_nodes if policy and policy.num_nodes else 1),
        ),
    )


def _status_of(trainjob: dict[str, Any]) -> tuple[str, str | None]:
    terminal = terminal_condition(trainjob)
    if terminal is not None:
        return str(terminal["type"]), terminal.get("message")
    if condition_of(trainjob, "Running") is not None:
        return "Running", None
    return "Created", None


class LocalBackend:
    def __init__(self, config: LocalBackendConfig | None = None) -> None:
        self.config = config or LocalBackendConfig()
        self.store = LocalJobStore(self.config.root)

    # ---------------------------------------------------------------- runtimes

    def _runtimes(self) -> list[AnyTrainingRuntime]:
        extra = load_runtimes(Path(p) for p in self.config.runtime_files)
        return [*extra, *builtin_runtimes()]

    def _runtime(self, name: str) -> AnyTrainingRuntime:
        for runtime in self._runtimes():
            if runtime.metadata.name == name:
                return runtime
        known = ", ".join(sorted({r.metadata.name for r in self._runtimes()}))
        raise ValueError(f"runtime {name!r} not found; available: {known}")

    def list_runtimes(self) -> list[Runtime]:
        return [_runtime_view(r) for r in self._runtimes() if FRAMEWORK_LABEL in r.metadata.labels]

    def get_runtime(self, name: str) -> Runtime:
        return _runtime_view(self._runtime(name))

    # ---------------------------------------------------------------- jobs

    def train(
        self,
        runtime: str | Runtime | None = None,
        initializer: Initializer | None = None,
        trainer: CustomTrainer | BuiltinTrainer | None = None,
    ) -> str:
        runtime_name = runtime.name if isinstance(runtime, Runtime) else (runtime or DEFAULT_RUNTIME)
        chosen = self._runtime(runtime_name)
        framework = _runtime_view(chosen).trainer.framework
        if isinstance(trainer, BuiltinTrainer):
            raise ValueError(
                "BuiltinTrainer (torchtune) cannot run locally: it needs model weights and GPUs; "
                "runtimes.sdk.trainjobs.build_trainjob renders its TrainJob for a cluster"
            )
        # The function and the manifest are checked before the job directory exists: a bad
        # input (a lambda, a resource named ``gpus``) leaves nothing behind.
        source = entrypoint_source(trainer) if isinstance(trainer, CustomTrainer) else None
        name = new_job_name()
        job = self.store.job(name)
        script = job.path / f"train_{name}.py"
        manifest = build_trainjob(name, runtime_name, framework, trainer, initializer, script, self.config.namespace)
        job.create()
        if source is not None:
            script.write_text(source)
        try:
            plan = plan_trainjob(TrainJobModel.model_validate(manifest), chosen)  # renders: bad input raises here
            # Here, not in the detached launcher: a job this machine lacks the GPUs for raises to the caller.
            plan_visible_devices(plan, LaunchOptions(device=device_choice(self.config.device)))
        except LocalRunError as error:
            job_dir = job.path
            for leftover in sorted(job_dir.rglob("*"), reverse=True):
                leftover.rmdir() if leftover.is_dir() else leftover.unlink()
            job_dir.rmdir()
            raise ValueError(str(error)) from None
        submitted = job.path / "submitted.yaml"
        submitted.write_text(yaml.safe_dump_all([manifest, chosen.to_dict()], sort_keys=False))
        initial = dict(manifest, status={"conditions": []})
        job.write_trainjob(initial)
        # Through a shell that backgrounds it and exits at once: the launcher is nobody's child
        # here, so it outlives this process and leaves neither a zombie nor an unreaped Popen.
        launcher = [sys.executable, "-m", "runtimes.local", str(submitted), "--workdir", str(job.path)]
        launcher += ["--device", self.config.device]
        log = str(job.path / "launcher.log")
        subprocess.run(
            ["/bin/sh", "-c", '"$@" >"$0" 2>&1 </dev/null &', log, *launcher],
            check=True,
            stdin=subprocess.DEVNULL,
        )
        return name

    def _view(self, name: str, data: dict[str, Any]) -> TrainJob:
        status, message = _status_of(data)
        spec = data.get("spec") or {}
        runtime_name = (spec.get("runtimeRef") or {}).get("name", "")
        try:
            runtime = self.get_runtime(runtime_name)
        except ValueError:
            runtime = Runtime(runtime_name, RuntimeTrainer("CustomTrainer", "unknown"))
        num_nodes = int((spec.get("trainer") or {}).get("numNodes") or runtime.trainer.num_nodes)
        jobs = {j["name"]: j for j in (data.get("status") or {}).get("jobsStatus") or []}
        steps = []
        for step_name in ("dataset-initializer", "model-initializer"):
            if step_name in jobs:
                steps.append(Step(step_name, _job_state(jobs[step_name]), f"{name}-{step_name}-0-0"))
        for node in range(num_nodes):
            state = _job_state(jobs["node"]) if "node" in jobs else None
            steps.append(Step(f"node-{node}", state, f"{name}-node-0-{node}"))
        created = next(
            (
                c.get("lastTransitionTime")
                for c in (data.get("status") or {}).get("conditions") or []
                if c["type"] == "Created"
            ),
            None,
        )
        return TrainJob(
            name=name,
            runtime=runtime,
            steps=steps,
            num_nodes=num_nodes,
            status=status,
            creation_timestamp=datetime.fromisoformat(created) if created else None,
            message=message,
            trainer_status=(data.get("status") or {}).get("trainerStatus"),
        )

    def list_jobs(self, runtime: Runtime | None = None) -> list[TrainJob]:
        jobs = [self._view(n, self.store.get(n)) for n in self.store.names()]
        return [j for j in jobs if runtime is None or j.runtime.name == runtime.name]

    def get_job(self, name: str) -> TrainJob:
        try:
            return self._view(name, self.store.get(name))
        except LocalRunError as error:
            raise ValueError(str(error)) from None

    def get_job_logs(self, name: str, step: str | None = "node-0", follow: bool = False) -> Iterator[str]:
        job = self.store.job(name)
        if not job.trainjob_file.is_file():
            raise ValueError(f"TrainJob {name!r} not found in the local store {self.store.jobs_dir}")

        def finished() -> Iterator[bool]:
            while True:
                yield not follow or terminal_condition(job.read_trainjob()) is not None

        return follow_lines(job.log_file(step), finished())

    def wait_for_job_status(self, name: str, status: set[str], timeout: float, polling_interval: float) -> TrainJob:
        return wait_for_status(self.get_job, name, status, timeout, polling_interval)

    def delete_job(self, name: str) -> None:
        try:
            self.store.delete(name)
        except LocalRunError as error:
            raise ValueError(str(error)) from None


def _job_state(job_status: dict[str, Any]) -> str:
    if job_status.get("failed"):
        return "Failed"
    if job_status.get("active"):
        return "Running"
    if job_status.get("succeeded"):
        return "Succeeded"
    return "Pending"
