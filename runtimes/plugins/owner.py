"""Owner references from a rendered object back to its TrainJob, and the metadata that carries them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtimes.api.trainer import TRAINER_API_VERSION, TRAINJOB_KIND, TrainJob


def owner_references(trainjob: TrainJob) -> list[dict[str, Any]]:
    """The controller reference Trainer sets, or nothing for a TrainJob that has no uid yet.

    A TrainJob read from a file (``trainyard render``) has no uid, and Kubernetes rejects an
    owner reference without one, so none is written; the controller renders with the live object.
    """
    if not trainjob.metadata.uid:
        return []
    return [
        {
            "apiVersion": TRAINER_API_VERSION,
            "kind": TRAINJOB_KIND,
            "name": trainjob.metadata.name,
            "uid": trainjob.metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def rendered_metadata(
    trainjob: TrainJob,
    namespace: str | None,
    name: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A rendered object's metadata: its name, the TrainJob's namespace, labels and annotations
    where there are any, and the owner reference back to the TrainJob (none without a uid)."""
    metadata: dict[str, Any] = {}
    if name is not None:
        metadata["name"] = name
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    owners = owner_references(trainjob)
    if owners:
        metadata["ownerReferences"] = owners
    return metadata
