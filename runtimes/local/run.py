"""From a TrainJob file to a finished local run: load, find the runtime, render, launch.

The TrainJob is rendered with :func:`runtimes.render.render_trainjob` exactly as the controller
would render it, and the rendered JobSet is what runs. The runtime comes from ``--runtime``
files, from runtime documents in the TrainJob file itself, or from the built-in
ClusterTrainingRuntimes in ``manifests/runtimes/``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from runtimes import loading
from runtimes.api.trainer import TRAINJOB_KIND, AnyTrainingRuntime, TrainJob
from runtimes.errors import RenderError
from runtimes.loading import LoadError
from runtimes.local.errors import LocalRunError
from runtimes.local.launcher import Echo, LaunchOptions, LocalLauncher, LocalRunResult
from runtimes.local.plan import LocalPlan, plan_from_jobset
from runtimes.local.store import JobDirectory
from runtimes.messages import describe_errors, subject_of

Warn = Callable[[str], None]


def _local_error(error: LoadError) -> LocalRunError:
    return LocalRunError(str(error))


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr)


def _emit(warnings: list[str], warn: Warn | None) -> None:
    for line in warnings:
        (warn or _to_stderr)(line)


def load_runtimes(paths: Iterable[Path], warn: Warn | None = None) -> list[AnyTrainingRuntime]:
    """Every TrainingRuntime / ClusterTrainingRuntime in ``paths`` (files or directories), each
    checked by the webhook's rules (``runtimes.loading.parse_object``); unknown fields go to ``warn``
    (default: stderr)."""
    found: list[AnyTrainingRuntime] = []
    warnings: list[str] = []
    try:
        for path in paths:
            files = sorted(path.glob("*.y*ml")) if path.is_dir() else [path]
            for file in files:
                found.extend(loading.load_runtimes(file, warnings))
    except LoadError as error:
        raise _local_error(error) from None
    finally:
        _emit(warnings, warn)
    return found


def builtin_runtimes() -> list[AnyTrainingRuntime]:
    try:
        return loading.load_builtin_runtimes()
    except LoadError as error:
        raise _local_error(error) from None


def load_trainjob_file(path: Path, warn: Warn | None = None) -> tuple[TrainJob, list[AnyTrainingRuntime]]:
    """The TrainJob in ``path`` and any runtimes written next to it in the same file, checked as
    :func:`load_runtimes` checks; the TrainJob's runtime rules run at :func:`plan_trainjob`."""
    warnings: list[str] = []
    try:
        trainjob = loading.load_trainjob(path, warnings)
        runtimes = loading.load_runtimes(path)
    except LoadError as error:
        raise _local_error(error) from None
    finally:
        _emit(warnings, warn)
    if not trainjob.metadata.name:
        raise LocalRunError(f"{path}: metadata.name is empty: give the TrainJob a name")
    return trainjob, runtimes


def find_runtime(trainjob: TrainJob, candidates: Sequence[AnyTrainingRuntime]) -> AnyTrainingRuntime:
    """The runtime ``spec.runtimeRef`` names, among ``candidates`` then the built-in ones."""
    ref = trainjob.spec.runtime_ref
    if not ref.name:
        raise LocalRunError("spec.runtimeRef.name is empty: name a TrainingRuntime or ClusterTrainingRuntime")
    pool = [*candidates, *builtin_runtimes()]
    for runtime in pool:
        if runtime.kind == ref.effective_kind and runtime.metadata.name == ref.name:
            return runtime
    known = sorted({f"{r.kind}/{r.metadata.name}" for r in pool})
    raise LocalRunError(
        f"spec.runtimeRef: {ref.effective_kind} {ref.name!r} not found; pass it with --runtime FILE "
        f"or use one of: {', '.join(known) or 'none'}"
    )


def plan_trainjob(trainjob: TrainJob, runtime: AnyTrainingRuntime) -> LocalPlan:
    """Render the TrainJob with its runtime and read the local plan from the JobSet."""
    local = trainjob.model_copy(deep=True)
    local.spec.suspend = False  # a local run is admitted by definition
    try:
        rendered = render_for_local(local, runtime)
    except RenderError as error:
        # the webhook's words: TrainJob "ns/name" is invalid: field: why; ...
        subject = error.subject
        if subject.startswith(f"{TRAINJOB_KIND} "):
            subject = subject_of(TRAINJOB_KIND, trainjob.metadata.name, trainjob.metadata.namespace or "default")
        raise LocalRunError(describe_errors(subject, error.errors)) from None
    return plan_from_jobset(rendered[0], rendered[1], rendered[2])


def render_for_local(
    trainjob: TrainJob, runtime: AnyTrainingRuntime
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """(JobSet, ConfigMaps, Secrets) as dicts, through the one renderer the cluster path uses."""
    from runtimes.render import render_trainjob

    rendered = render_trainjob(trainjob, runtime)
    return rendered.jobset.to_dict(), list(rendered.config_maps), list(rendered.secrets)


async def run_trainjob(
    trainjob: TrainJob,
    runtime: AnyTrainingRuntime,
    job: JobDirectory,
    options: LaunchOptions | None = None,
    echo: Echo | None = print,
) -> LocalRunResult:
    """Render and run ``trainjob`` locally in ``job``; returns how it ended."""
    plan = plan_trainjob(trainjob, runtime)
    submitted = trainjob.to_dict()
    submitted.pop("status", None)
    launcher = LocalLauncher(plan, job, submitted, options, echo)
    return await launcher.run()
