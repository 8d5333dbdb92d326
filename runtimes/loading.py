"""Loading TrainJobs and (Cluster)TrainingRuntimes from YAML files.

Every object is checked as the webhook checks it (``parse_object``): errors name the file and
line, the object and the field in the webhook's words, never a stack trace:
``job.yaml:10: TrainJob "default/mnist" is invalid: spec.trainer.numNodes: Input should be a valid integer``;
unknown fields are warnings naming the nearest known field.

Built-in runtimes live in the repository's ``manifests/runtimes/``. :func:`builtin_runtimes_dir`
finds them, in order: ``$TRAINYARD_RUNTIMES_DIR``; ``manifests/runtimes`` next to the installed
``runtimes`` package (a source checkout or an editable install); ``./manifests/runtimes`` under
the current directory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from runtimes.api.trainer import (
    CLUSTER_TRAINING_RUNTIME_KIND,
    TRAINER_API_VERSION,
    TRAINER_KINDS,
    TRAINING_RUNTIME_KIND,
    TRAINJOB_KIND,
    AnyTrainingRuntime,
    ClusterTrainingRuntime,
    TrainingRuntime,
    TrainJob,
)
from runtimes.errors import FieldError
from runtimes.k8s.documents import Document, DocumentError, parse_documents
from runtimes.k8s.fields import unknown_fields
from runtimes.k8s.meta import Resource
from runtimes.messages import (
    describe_errors,
    errors_from_pydantic,
    parse_field_path,
    subject_of,
    version_not_understood,
)
from runtimes.runtime_validation import validate_runtime
from runtimes.validation import validate_trainjob_fields

RUNTIMES_DIR_ENV = "TRAINYARD_RUNTIMES_DIR"


class LoadError(DocumentError):
    """A file that cannot be read as the objects asked for; the message says where and why."""


def read_yaml_documents(path: str | Path) -> list[Document]:
    """Every non-empty document of a (multi-document) YAML file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LoadError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise LoadError(f"{path}: cannot read: {error}") from None
    try:
        return list(parse_documents(text, path))
    except DocumentError as error:
        raise LoadError(str(error)) from None


def _subject(document: Document) -> str:
    metadata = document.data.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    if not namespace and document.kind in (TRAINJOB_KIND, TRAINING_RUNTIME_KIND):
        namespace = "default"  # as kubectl would create it
    return subject_of(document.kind or "object", document.name or None, namespace)


def _refusal(document: Document, errors: list[FieldError]) -> LoadError:
    line = document.line_of(parse_field_path(errors[0].path)) if errors else document.line
    return LoadError(f"{document.path}:{line}: {describe_errors(_subject(document), errors)}")


def parse_object(document: Document, warnings: list[str] | None = None) -> Resource:
    """The Trainer object a document holds, checked as the webhook checks it.

    The apiVersion must be Trainer's, the schema must parse, and the kind's own rules must hold
    (a runtime's; a TrainJob's own fields — its runtime's rules run where the runtime is known,
    at render). Refusals are ``LoadError``s in the webhook's words after ``file:line:``; unknown
    fields are appended to ``warnings`` (``file:line: warning: ...``), as the API server's field
    validation warns.
    """
    kind = document.kind
    model = TRAINER_KINDS.get(kind)
    if model is None:
        raise LoadError(
            f"{document.where()}: kind {kind!r} is not a Trainer kind; expected one of {', '.join(TRAINER_KINDS)}"
        )
    api_version = str(document.data.get("apiVersion") or "")
    if api_version != TRAINER_API_VERSION:
        raise _refusal(document, [version_not_understood(api_version, kind, (TRAINER_API_VERSION,))])
    try:
        obj = model.model_validate(document.data)
    except ValidationError as error:
        raise _refusal(document, errors_from_pydantic(error)) from None
    if isinstance(obj, TrainJob):
        errors = validate_trainjob_fields(obj)
    else:
        assert isinstance(obj, TrainingRuntime | ClusterTrainingRuntime)
        errors = validate_runtime(obj)
    if errors:
        raise _refusal(document, errors)
    if warnings is not None:
        warnings += [
            f"{document.path}:{document.line_of(unknown.path)}: warning: {_subject(document)}: {unknown}"
            for unknown in unknown_fields(obj)
        ]
    return obj


def load_trainer_objects(path: str | Path, warnings: list[str] | None = None) -> list[Resource]:
    """Every TrainJob / TrainingRuntime / ClusterTrainingRuntime in a file; other kinds are skipped."""
    documents = read_yaml_documents(path)
    return [parse_object(doc, warnings) for doc in documents if str(doc.data.get("kind")) in TRAINER_KINDS]


def load_trainjob(path: str | Path, warnings: list[str] | None = None) -> TrainJob:
    """The one TrainJob in ``path``."""
    documents = read_yaml_documents(path)
    jobs = [doc for doc in documents if doc.data.get("kind") == TRAINJOB_KIND]
    if len(jobs) != 1:
        kinds = ", ".join(str(doc.data.get("kind")) for doc in documents) or "nothing"
        raise LoadError(f"{path}: expected exactly one TrainJob, found {len(jobs)} (the file holds: {kinds})")
    job = parse_object(jobs[0], warnings)
    assert isinstance(job, TrainJob)
    return job


def load_runtimes(path: str | Path, warnings: list[str] | None = None) -> list[AnyTrainingRuntime]:
    """Every TrainingRuntime / ClusterTrainingRuntime in ``path``, each checked (see :func:`parse_object`)."""
    runtimes: list[AnyTrainingRuntime] = []
    for doc in read_yaml_documents(path):
        if doc.data.get("kind") in (TRAINING_RUNTIME_KIND, CLUSTER_TRAINING_RUNTIME_KIND):
            obj = parse_object(doc, warnings)
            assert isinstance(obj, TrainingRuntime | ClusterTrainingRuntime)
            runtimes.append(obj)
    return runtimes


def builtin_runtimes_dir() -> Path | None:
    """Where the built-in ClusterTrainingRuntimes are (see the module docstring for the order)."""
    candidates = []
    if os.environ.get(RUNTIMES_DIR_ENV):
        candidates.append(Path(os.environ[RUNTIMES_DIR_ENV]))
    candidates.append(Path(__file__).resolve().parent.parent / "manifests" / "runtimes")
    candidates.append(Path.cwd() / "manifests" / "runtimes")
    return next((path for path in candidates if path.is_dir()), None)


def load_builtin_runtimes(directory: Path | None = None) -> list[AnyTrainingRuntime]:
    directory = directory or builtin_runtimes_dir()
    if directory is None:
        return []
    runtimes: list[AnyTrainingRuntime] = []
    for path in sorted(directory.glob("*.y*ml")):
        runtimes.extend(load_runtimes(path))
    return runtimes


def find_runtime(
    runtimes: list[AnyTrainingRuntime], name: str, kind: str = CLUSTER_TRAINING_RUNTIME_KIND
) -> AnyTrainingRuntime | None:
    return next((rt for rt in runtimes if rt.metadata.name == name and rt.kind == kind), None)


class _BlockStyleDumper(yaml.SafeDumper):
    """Multi-line strings (scripts in ``command``, hostfiles) as readable ``|`` blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.endswith((" ", "\t")) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockStyleDumper.add_representer(str, _represent_str)


def dump_documents(objects: list[dict[str, Any]]) -> str:
    """Objects as a multi-document YAML stream, keys in the order they were built."""
    return yaml.dump_all(objects, Dumper=_BlockStyleDumper, sort_keys=False, default_flow_style=False)
