"""What a DELETE answers, as the registry's store decides it.

An object kept by finalizers comes back as it now is (``deletionTimestamp`` set). So does one
deleted with ``Orphan`` or ``Foreground`` propagation (a batch/v1 Job's default is ``Orphan``):
the real server adds the ``orphan`` or ``foregroundDeletion`` finalizer and leaves the object
to the garbage collector, which this server runs at once, so the answer is the object as the
real server shows it at that moment. A Pod, a ServiceAccount or a Namespace (whose registries
return the deleted object) comes back too: a Pod and a Namespace with their deletion stamped on
it (graceful deletion, the namespace's finalizer); anything else that is gone is a ``Status`` of
``Success`` naming it (kind, group, name, uid).
"""

from __future__ import annotations

from typing import Any

from .errors import success
from .kinds import ResourceType
from .ownership import FOREGROUND, ORPHAN
from .records import clone, timestamp

GC_FINALIZERS = {ORPHAN: "orphan", FOREGROUND: "foregroundDeletion"}


def marked_for_deletion(rtype: ResourceType, obj: dict[str, Any], *, grace: bool = True) -> dict[str, Any]:
    """``obj`` (a copy) as the real server stamps it when deletion starts: deletionTimestamp, a
    grace period of 0 (none for a Namespace), and the next generation where the kind keeps one."""
    marked = clone(obj)
    metadata = marked["metadata"]
    if not metadata.get("deletionTimestamp"):
        metadata["deletionTimestamp"] = timestamp()
        if grace:
            metadata["deletionGracePeriodSeconds"] = 0
        if rtype.generation and metadata.get("generation"):
            metadata["generation"] = int(metadata["generation"]) + 1
    return marked


def delete_answer(rtype: ResourceType, obj: dict[str, Any], policy: str) -> dict[str, Any]:
    """The body of a delete's 200: ``obj`` is the object the store kept (finalizers) or removed."""
    metadata = obj["metadata"]
    if metadata.get("finalizers"):
        return obj
    if policy in GC_FINALIZERS:
        marked = marked_for_deletion(rtype, obj)
        marked["metadata"]["finalizers"] = [GC_FINALIZERS[policy]]
        return marked
    if (rtype.group, rtype.kind) == ("", "Namespace"):
        marked = marked_for_deletion(rtype, obj, grace=False)
        marked["spec"] = {"finalizers": ["kubernetes"]}
        marked["status"] = {"phase": "Terminating"}
        return marked
    if (rtype.group, rtype.kind) == ("", "Pod"):
        return marked_for_deletion(rtype, obj)  # graceful deletion stamps it first
    if rtype.returns_deleted:
        return obj
    return success(str(metadata.get("name")), rtype.group, rtype.plural, str(metadata.get("uid", "")))
