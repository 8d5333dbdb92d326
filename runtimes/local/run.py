"""From a TrainJob file to a finished local run: load, find the runtime, render, launch.

The TrainJob is rendered with :func:`runtimes.render.render_trainjob` exactly as the controller
would render it, and the rendered JobSet is what runs. The runtime comes from ``--runtime``
files, from runtime documents in the TrainJob file itself, or from the built-in
ClusterTrainingRuntimes in ``manifests/runtimes/``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from runtimes.api.trainer import (
    CLUSTER_TRAINING_RUNTIME_KIND,
    TRAINING_RUNTIME_KIND,
    TRAINJOB_KIND,
    AnyTrainingRuntime,
    ClusterTrainingRuntime,
    TrainingRuntime,
    TrainJob,
)
from runtimes.errors import RenderError
from runtimes.local.errors import LocalRunError
from runtimes.local.launcher import Echo, LaunchOptions, LocalLauncher, LocalRunResult
from runtimes.local.plan import LocalPlan, plan_from_jobset
from runtimes.local.store import JobDirectory

BUILTIN_RUNTIMES_DIR = Path(__file__).resolve().parents[2] / "manifests" / "runtimes"


def _documents(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text()
    except OSError as error:
        raise LocalRunError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise LocalRunError(f"{path}: invalid YAML{where}: {problem}") from None
    for index, document in enumerate(documents):
        if not isinstance(document, dict):
            raise LocalRunError(f"{path}: document {index + 1} is not a mapping (a Kubernetes object)")
    return documents


def _validation_message(path: Path, kind: str, error: ValidationError) -> str:
    problems = "; ".join(f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}" for item in error.errors())
    return f"{path}: invalid {kind}: {problems}"


def _runtime_of(document: dict[str, Any], path: Path) -> AnyTrainingRuntime | None:
    kind = document.get("kind")
    model: type[TrainingRuntime] | type[ClusterTrainingRuntime]
    if kind == TRAINING_RUNTIME_KIND:
        model = TrainingRuntime
    elif kind == CLUSTER_TRAINING_RUNTIME_KIND:
        model = ClusterTrainingRuntime
    else:
        return None
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise LocalRunError(_validation_message(path, str(kind), error)) from None


def load_runtimes(paths: Iterable[Path]) -> list[AnyTrainingRuntime]:
    """Every TrainingRuntime / ClusterTrainingRuntime in ``paths`` (files or directories)."""
    found: list[AnyTrainingRuntime] = []
    for path in paths:
        files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
        for file in files:
            found.extend(r for doc in _documents(file) if (r := _runtime_of(doc, file)) is not None)
    return found


def builtin_runtimes() -> list[AnyTrainingRuntime]:
    return load_runtimes([BUILTIN_RUNTIMES_DIR]) if BUILTIN_RUNTIMES_DIR.is_dir() else []


def load_trainjob_file(path: Path) -> tuple[TrainJob, list[AnyTrainingRuntime]]:
    """The TrainJob in ``path`` and any runtimes written next to it in the same file."""
    documents = _documents(path)
    trainjobs = [doc for doc in documents if doc.get("kind") == TRAINJOB_KIND]
    if len(trainjobs) != 1:
        kinds = [doc.get("kind") for doc in documents]
        raise LocalRunError(f"{path}: expected exactly one TrainJob, found kinds {kinds}")
    try:
        trainjob = TrainJob.model_validate(trainjobs[0])
    except ValidationError as error:
        raise LocalRunError(_validation_message(path, TRAINJOB_KIND, error)) from None
    if not trainjob.metadata.name:
        raise LocalRunError(f"{path}: metadata.name is empty: give the TrainJob a name")
    runtimes = [r for doc in documents if (r := _runtime_of(doc, path)) is not None]
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
        raise LocalRunError(str(error)) from None
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
