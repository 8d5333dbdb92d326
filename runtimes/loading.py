"""Loading TrainJobs and (Cluster)TrainingRuntimes from YAML files.

Errors name the file and line, the object (kind and name) and the field, never a stack trace:
``job.yaml:3: TrainJob 'mnist': spec.trainer.numNodes: Input should be a valid integer (got 'two')``.

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
    TRAINER_KINDS,
    TRAINING_RUNTIME_KIND,
    TRAINJOB_KIND,
    AnyTrainingRuntime,
    ClusterTrainingRuntime,
    TrainingRuntime,
    TrainJob,
)
from runtimes.k8s.documents import Document, DocumentError, document_error, parse_documents
from runtimes.k8s.meta import Resource

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


def parse_object(document: Document) -> Resource:
    """The Trainer object a document holds, or a LoadError naming file, line, object and field."""
    kind = document.kind
    model = TRAINER_KINDS.get(kind)
    if model is None:
        raise LoadError(
            f"{document.where()}: kind {kind!r} is not a Trainer kind; expected one of {', '.join(TRAINER_KINDS)}"
        )
    try:
        return model.model_validate(document.data)
    except ValidationError as error:
        raise LoadError(str(document_error(document, error))) from None


def load_trainer_objects(path: str | Path) -> list[Resource]:
    """Every TrainJob / TrainingRuntime / ClusterTrainingRuntime in a file; other kinds are skipped."""
    return [parse_object(doc) for doc in read_yaml_documents(path) if str(doc.data.get("kind")) in TRAINER_KINDS]


def load_trainjob(path: str | Path) -> TrainJob:
    """The one TrainJob in ``path``."""
    documents = read_yaml_documents(path)
    jobs = [doc for doc in documents if doc.data.get("kind") == TRAINJOB_KIND]
    if len(jobs) != 1:
        kinds = ", ".join(str(doc.data.get("kind")) for doc in documents) or "nothing"
        raise LoadError(f"{path}: expected exactly one TrainJob, found {len(jobs)} (the file holds: {kinds})")
    job = parse_object(jobs[0])
    assert isinstance(job, TrainJob)
    return job


def load_runtimes(path: str | Path) -> list[AnyTrainingRuntime]:
    runtimes: list[AnyTrainingRuntime] = []
    for doc in read_yaml_documents(path):
        if doc.data.get("kind") in (TRAINING_RUNTIME_KIND, CLUSTER_TRAINING_RUNTIME_KIND):
            obj = parse_object(doc)
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
