"""Owner references from a rendered object back to its TrainJob."""

from __future__ import annotations

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
