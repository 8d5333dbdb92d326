"""How the CLI commands read their YAML: through the one validation path, with located messages.

Every command that reads objects (``admit``, ``render``, ``run``) goes through
``scheduler.api.loading.read_checked``: an invalid object is a ``UserError`` (exit 2) naming the
file, the line, the object and the field in the webhook's words; warnings (unknown fields,
deprecated spellings) and notes (foreign documents skipped) go to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.cli.errors import UserError

if TYPE_CHECKING:
    from runtimes.api.trainer import AnyTrainingRuntime, TrainJob
    from runtimes.errors import FieldError
    from scheduler.api.loading import CheckedInput, ReadObject


def read_inputs(paths: Sequence[str | Path], *, strict: bool = False, trainjob_rules: bool = True) -> CheckedInput:
    """Every object in ``paths``, checked; warnings and notes printed to stderr.

    ``trainjob_rules=False``: the caller validates each TrainJob with its runtime (as the webhook).
    """
    from runtimes.k8s.documents import DocumentError
    from scheduler.api.loading import InputError, read_checked

    try:
        checked = read_checked(paths, strict=strict, trainjob_rules=trainjob_rules)
    except DocumentError as error:
        for line in error.warnings if isinstance(error, InputError) else []:
            print(line, file=sys.stderr)
        raise UserError(str(error)) from None
    for line in checked.notes:
        print(f"note: {line}", file=sys.stderr)
    for line in checked.warnings:
        print(line, file=sys.stderr)
    return checked


def runtimes_of(checked: CheckedInput) -> list[AnyTrainingRuntime]:
    from runtimes.api.trainer import ClusterTrainingRuntime, TrainingRuntime

    return [read.obj for read in checked.objects if isinstance(read.obj, TrainingRuntime | ClusterTrainingRuntime)]


def one_trainjob(path: str | Path, *, strict: bool = False) -> tuple[ReadObject, list[AnyTrainingRuntime]]:
    """The one TrainJob in ``path`` and any runtimes written beside it.

    The TrainJob is parsed here; the caller validates it with its runtime, in the webhook's one pass.
    """
    from runtimes.api.trainer import TrainJob

    checked = read_inputs([path], strict=strict, trainjob_rules=False)
    jobs = checked.of(TrainJob)
    if len(jobs) != 1:
        kinds = ", ".join(read.obj.kind for read in checked.objects) or "no object trainyard reads"
        raise UserError(
            f"{path}: expected exactly one TrainJob (trainer.kubeflow.org/v1alpha1), found {len(jobs)} "
            f"(the file holds: {kinds})"
        )
    return jobs[0], runtimes_of(checked)


def missing_runtime(read: ReadObject, where_looked: str) -> UserError:
    """No runtime for the TrainJob: the webhook's message (every rule it can check without one), then
    where the CLI looked."""
    from runtimes.validation import validate_trainjob

    trainjob: TrainJob = read.obj  # type: ignore[assignment]
    refusal = trainjob_refusal(read, validate_trainjob(trainjob, None), at="spec.runtimeRef")
    return UserError(f"{refusal} ({where_looked})")


def trainjob_refusal(read: ReadObject, errors: Sequence[FieldError], *, at: str | None = None) -> UserError:
    """A TrainJob's errors as the webhook words them, at the file and line of the first field."""
    from scheduler.api.checks import describe_errors, subject_of

    trainjob: TrainJob = read.obj  # type: ignore[assignment]
    subject = subject_of("TrainJob", trainjob.name, trainjob.namespace or "default")
    first = at if at is not None else (errors[0].path if errors else "")
    return UserError(f"{read.where(first)}: {describe_errors(subject, list(errors))}")
