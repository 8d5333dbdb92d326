"""Who owns whom: the index the garbage collector reads, kept up to date on every write.

The real garbage collector builds the same graph from its informers: an object's
``metadata.ownerReferences`` name owners by uid; when an owner is gone, its dependents are
deleted (background or foreground propagation) or lose the reference (``Orphan``). The fake
server keeps the graph in the store so that collection runs right after the owner's deletion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .kinds import ResourceType

Key = tuple[str, str]  # (namespace or "", name)
Ref = tuple[ResourceType, Key]

BACKGROUND = "Background"
FOREGROUND = "Foreground"
ORPHAN = "Orphan"
PROPAGATION_POLICIES = (BACKGROUND, FOREGROUND, ORPHAN)


def owner_uids(obj: Mapping[str, Any] | None) -> frozenset[str]:
    if obj is None:
        return frozenset()
    references = (obj.get("metadata") or {}).get("ownerReferences") or []
    return frozenset(str(r["uid"]) for r in references if isinstance(r, dict) and r.get("uid"))


def default_propagation(rtype: ResourceType) -> str:
    """What a delete without a policy does: batch/v1 Jobs orphan their pods (kept for compatibility
    by the real server), everything else is collected in the background."""
    return ORPHAN if (rtype.group, rtype.kind) == ("batch", "Job") else BACKGROUND


class OwnerIndex:
    """Live objects by uid, and the dependents of each owner uid."""

    def __init__(self) -> None:
        self.live: dict[str, Ref] = {}
        self.dependents: dict[str, set[Ref]] = {}

    def track(self, ref: Ref, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """Record one write: ``new`` is None when the object was removed."""
        if old is not None:
            self.live.pop(str(old["metadata"].get("uid", "")), None)
        if new is not None and new["metadata"].get("uid"):
            self.live[str(new["metadata"]["uid"])] = ref
        before, after = owner_uids(old), owner_uids(new)
        for uid in before - after:
            found = self.dependents.get(uid)
            if found is not None:
                found.discard(ref)
                if not found:
                    del self.dependents[uid]
        for uid in after - before:
            self.dependents.setdefault(uid, set()).add(ref)

    def dependents_of(self, uid: str) -> list[Ref]:
        # sorted so that collection (and its watch events) runs in a stable order
        return sorted(self.dependents.get(uid, ()), key=lambda ref: (ref[0].plural, ref[1]))

    def exists(self, uid: str) -> bool:
        return uid in self.live
