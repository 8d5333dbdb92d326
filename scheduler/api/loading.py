"""Loading Kueue objects, Nodes and Namespaces from YAML for the engine."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from runtimes.k8s.core import Node
from runtimes.k8s.documents import Document, DocumentError, document_error, read_documents
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import KUEUE_API_VERSIONS, KUEUE_KINDS, Workload


@dataclass
class KueueObjects:
    """What a set of YAML files held, sorted for the engine."""

    objects: list[Resource] = field(default_factory=list)  # queue objects and Nodes
    workloads: list[Workload] = field(default_factory=list)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # documents of other kinds, by location


def _parse(document: Document) -> Resource:
    kind = document.kind
    model: type[Resource] = Node if kind == "Node" else KUEUE_KINDS[kind]
    try:
        return model.model_validate(document.data)
    except ValidationError as error:
        raise document_error(document, error) from None


def load_kueue_objects(paths: Iterable[str | Path]) -> KueueObjects:
    """Read Kueue objects (kueue.x-k8s.io v1beta2, v1beta1), Workloads, Nodes and Namespaces."""
    loaded = KueueObjects()
    for document in read_documents(paths):
        kind, api_version = document.kind, str(document.data.get("apiVersion", ""))
        if not kind or not api_version:
            raise DocumentError(f"{document.where()}: missing apiVersion or kind; every object needs both")
        if kind == "Namespace" and api_version == "v1":
            metadata = document.data.get("metadata") or {}
            loaded.namespaces[document.name] = dict(metadata.get("labels") or {})
        elif kind == "Node" and api_version == "v1":
            loaded.objects.append(_parse(document))
        elif kind in KUEUE_KINDS and api_version in KUEUE_API_VERSIONS:
            parsed = _parse(document)
            if isinstance(parsed, Workload):
                if not parsed.metadata.name:
                    raise DocumentError(f"{document.where()}: metadata.name is required")
                loaded.workloads.append(parsed)
            else:
                loaded.objects.append(parsed)
        elif kind in KUEUE_KINDS:
            raise DocumentError(
                f"{document.where()}: apiVersion {api_version!r} is not a Kueue version; "
                f"use one of {', '.join(KUEUE_API_VERSIONS)}"
            )
        else:
            loaded.skipped.append(f"{document.where()} ({api_version})")
    return loaded
