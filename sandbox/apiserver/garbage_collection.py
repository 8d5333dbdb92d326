"""The garbage collector's part of the store: deletion with propagation to ownerReference dependents.

Deleting an object (once its finalizers are gone) runs the collector for its uid at once:
``Background`` deletes the dependents whose every owner is gone (recursively, each a watch
DELETED event) and strips the reference from those with another live owner; ``Orphan`` strips
the reference from all of them; ``Foreground`` deletes the dependents before the owner. The
real collector does the same asynchronously, a moment later. With ``collect_dangling`` an object
created with ownerReferences none of which names a live uid is collected right away, as the
real collector removes dependents of owners that no longer exist.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from .delete_answers import marked_for_deletion
from .kinds import ResourceType
from .ownership import BACKGROUND, FOREGROUND, ORPHAN, OwnerIndex, owner_uids
from .records import Key, clone


class GarbageCollection(ABC):
    owners: OwnerIndex
    objects: dict[ResourceType, dict[Key, dict[str, Any]]]
    # deletions waiting on finalizers: uid -> the propagation policy to apply once the object goes
    pending_propagation: dict[str, str]
    collected: int  # dependents the collector deleted
    collect_dangling: bool

    @abstractmethod
    def _bucket(self, rtype: ResourceType) -> dict[Key, dict[str, Any]]:
        """The stored objects of a type."""

    @abstractmethod
    def _commit(
        self, rtype: ResourceType, key: Key, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Record one write (a revision, a watch event) and return a copy of the object."""

    def _delete_stored(self, rtype: ResourceType, key: Key, policy: str) -> dict[str, Any]:
        stored = self._bucket(rtype)[key]
        obj = clone(stored)
        if obj["metadata"].get("finalizers"):
            if not obj["metadata"].get("deletionTimestamp"):
                self.pending_propagation[str(obj["metadata"].get("uid"))] = policy
                return self._commit(rtype, key, "MODIFIED", marked_for_deletion(rtype, obj), clone(stored))
            return obj
        if rtype.kind == "Namespace" and rtype.group == "":
            for other in list(self.objects):
                if other.namespaced:
                    for contained_key in [k for k in self._bucket(other) if k[0] == key[1]]:
                        contained = self._bucket(other).get(contained_key)
                        if contained is not None:  # not collected already as a dependent of an earlier one
                            self._remove(other, contained_key, clone(contained), contained, BACKGROUND)
        if policy == FOREGROUND:
            # the real server keeps the owner (with a foregroundDeletion finalizer) until its dependents
            # are gone; here they go first, in one step, so the owner's DELETED comes last as there
            self._collect(str(obj["metadata"].get("uid", "")), FOREGROUND)
        return self._remove(rtype, key, obj, stored, policy)

    def _remove(
        self, rtype: ResourceType, key: Key, obj: dict[str, Any], stored: dict[str, Any], policy: str
    ) -> dict[str, Any]:
        """Commit a deletion, then let the garbage collector act on the object's dependents."""
        removed = self._commit(rtype, key, "DELETED", obj, clone(stored))
        self._collect(str(obj["metadata"].get("uid", "")), policy)
        return removed

    def _collect(self, owner_uid: str, policy: str) -> None:
        """The garbage collector's work for a deleted owner: delete or orphan its dependents.

        A dependent that still has another live owner only loses the reference to this one, as
        the real collector does; ``Orphan`` removes the reference from every dependent.
        """
        if not owner_uid:
            return
        for rtype, key in self.owners.dependents_of(owner_uid):
            dependent = self._bucket(rtype).get(key)
            if dependent is None:
                continue
            references = dependent["metadata"].get("ownerReferences") or []
            others = [r for r in references if str(r.get("uid")) != owner_uid]
            if policy == ORPHAN or any(self.owners.exists(str(r.get("uid"))) for r in others):
                orphaned = clone(dependent)
                if others:
                    orphaned["metadata"]["ownerReferences"] = others
                else:
                    orphaned["metadata"].pop("ownerReferences", None)
                self._commit(rtype, key, "MODIFIED", orphaned, clone(dependent))
            else:
                self.collected += 1
                self._delete_stored(rtype, key, FOREGROUND if policy == FOREGROUND else BACKGROUND)

    def _collect_if_dangling(self, rtype: ResourceType, key: Key, obj: dict[str, Any]) -> None:
        owners = owner_uids(obj)
        if self.collect_dangling and owners and not any(self.owners.exists(uid) for uid in owners):
            self.collected += 1
            self._delete_stored(rtype, key, BACKGROUND)
