"""Reading objects from YAML files through the one validation path (``scheduler.api.checks``).

Every document is checked by the rules of its kind. An invalid one is refused with the webhook's
message, prefixed by the file and the line of the field at fault; unknown fields are warnings
(``strict``: errors), as the API server's field validation gives them; documents of kinds
trainyard does not read (a Deployment, a dashboard's JSON) are skipped with a note. All problems
of all files are reported together, one line each.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from runtimes.api.trainer import AnyTrainingRuntime, ClusterTrainingRuntime, TrainingRuntime, TrainJob
from runtimes.errors import FieldError
from runtimes.k8s.core import Node
from runtimes.k8s.documents import Document, DocumentError, read_documents
from runtimes.k8s.meta import Resource
from scheduler.api.checks import ObjectCheck, check_object, describe_errors, parse_field_path
from scheduler.api.kueue import Workload
from scheduler.jobs.registry import integration_for

# Kinds that live in a namespace: named "default/<name>" when the file gives none, as kubectl would.
NAMESPACED_KINDS = frozenset({"TrainJob", "TrainingRuntime", "LocalQueue", "Workload"})


class InputError(DocumentError):
    """Objects that cannot be used: one line per problem, each naming file, line, object and field.

    ``warnings`` are those of the objects read before the failure was known (to show them too).
    """

    def __init__(self, message: str, warnings: list[str] | None = None) -> None:
        super().__init__(message)
        self.warnings = list(warnings or [])


@dataclass(frozen=True)
class ReadObject:
    """A valid object and the document it came from (for messages about it later)."""

    document: Document
    obj: Resource

    def where(self, path: str = "") -> str:
        """``file:line`` of the object, or of the field ``path`` in it."""
        line = self.document.line_of(parse_field_path(path)) if path else self.document.line
        return f"{self.document.path}:{line}"


@dataclass
class CheckedInput:
    """What a set of files held, every object checked."""

    objects: list[ReadObject] = field(default_factory=list)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # unknown fields, deprecated spellings
    notes: list[str] = field(default_factory=list)  # foreign documents, skipped
    jobs: list[Document] = field(default_factory=list)  # job kinds Kueue integrates (scheduler.jobs)

    def of(self, kind: type[Resource]) -> list[ReadObject]:
        return [read for read in self.objects if isinstance(read.obj, kind)]


def _line_of_error(document: Document, errors: list[FieldError]) -> int:
    return document.line_of(parse_field_path(errors[0].path)) if errors else document.line


def check_document(
    document: Document, *, strict: bool = False, trainjob_rules: bool = True
) -> tuple[ObjectCheck, str | None, list[str]]:
    """The check of one document, its error line (``file:line: message``) if refused, its warnings.

    ``trainjob_rules=False`` leaves a TrainJob's rules to the caller, who runs them with its runtime
    in one pass (``runtimes.validation.validate_trainjob``), as the webhook does.
    """
    data = document.data
    metadata = data.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    if not namespace and data.get("kind") in NAMESPACED_KINDS:
        namespace = "default"
    check = check_object(data, namespace=namespace, rules=trainjob_rules or data.get("kind") != "TrainJob")
    if check.foreign:
        return check, None, []
    warnings = [f"{document.path}:{document.line}: warning: {check.subject}: {text}" for text in check.deprecated]
    if not strict:
        warnings += [
            f"{document.path}:{document.line_of(unknown.path)}: warning: {check.subject}: {unknown}"
            for unknown in check.unknown
        ]
    errors = check.errors + (check.strict_errors() if strict else [])
    if errors:
        message = check.message if not strict or not check.unknown else describe_errors(check.subject, errors)
        return check, f"{document.path}:{_line_of_error(document, errors)}: {message}", warnings
    return check, None, warnings


def read_checked(paths: Iterable[str | Path], *, strict: bool = False, trainjob_rules: bool = True) -> CheckedInput:
    """Every object in ``paths`` (files, directories, multi-document YAML), checked.

    ``trainjob_rules=False``: TrainJobs are parsed and their unknown fields listed, and the caller
    validates each with its runtime (see :func:`check_document`).

    Raises :class:`InputError` listing every invalid object (and ``DocumentError`` for a file that
    is not YAML at all).
    """
    loaded = CheckedInput()
    problems: list[str] = []
    for document in read_documents(paths):
        check, problem, warnings = check_document(document, strict=strict, trainjob_rules=trainjob_rules)
        if check.foreign and integration_for(check.api_version, check.kind) is not None:
            loaded.jobs.append(document)  # a Job, JobSet, Pod...: its Workload is derived by the caller
            continue
        if check.foreign:
            shown = f" {document.name!r}" if document.name else ""
            loaded.notes.append(
                f"{document.path}:{document.line}: skipped {check.kind or 'a document'}{shown} "
                f"({check.api_version or 'no apiVersion'}): not a kind trainyard reads"
            )
            continue
        loaded.warnings += warnings
        if problem is not None:
            problems.append(problem)
            continue
        assert check.obj is not None
        if check.kind == "Namespace":
            loaded.namespaces[check.obj.name] = dict(check.obj.metadata.labels)
        else:
            loaded.objects.append(ReadObject(document, check.obj))
    if problems:
        raise InputError("\n".join(problems), loaded.warnings)
    return loaded


@dataclass
class KueueObjects:
    """What a set of YAML files held, sorted for the engine (and for ``admit``'s TrainJobs)."""

    objects: list[Resource] = field(default_factory=list)  # queue objects and Nodes
    workloads: list[Workload] = field(default_factory=list)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    trainjobs: list[ReadObject] = field(default_factory=list)
    runtimes: list[AnyTrainingRuntime] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # notes on foreign documents, by location
    warnings: list[str] = field(default_factory=list)
    jobs: list[Document] = field(default_factory=list)  # Jobs, JobSets, Pods... (scheduler.jobs derives)


def load_kueue_objects(
    paths: Iterable[str | Path], *, strict: bool = False, trainjob_rules: bool = True
) -> KueueObjects:
    """Kueue objects (kueue.x-k8s.io v1beta2, v1beta1), Workloads, Nodes, Namespaces, TrainJobs and
    runtimes, each checked by the rules of its kind (``trainjob_rules``: see :func:`read_checked`),
    and the job documents whose Workloads ``scheduler.jobs`` derives (``jobs``)."""
    checked = read_checked(paths, strict=strict, trainjob_rules=trainjob_rules)
    loaded = KueueObjects(
        namespaces=checked.namespaces, skipped=checked.notes, warnings=checked.warnings, jobs=checked.jobs
    )
    for read in checked.objects:
        obj = read.obj
        if isinstance(obj, Workload):
            loaded.workloads.append(obj)
        elif isinstance(obj, TrainJob):
            loaded.trainjobs.append(read)
        elif isinstance(obj, TrainingRuntime | ClusterTrainingRuntime):
            loaded.runtimes.append(obj)
        elif isinstance(obj, Node) or type(obj).__module__.startswith("scheduler.api"):
            loaded.objects.append(obj)
    return loaded
