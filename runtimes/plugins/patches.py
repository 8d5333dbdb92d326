"""Strategic merge of runtimePatches / podTemplateOverrides over a runtime's JobSet template.

Trainer applies each ``runtimePatches`` entry with Kubernetes' strategic-merge-patch over the
JobSet template, in list order (``mergeRuntimePatches`` in ``pkg/runtime/core``). This is the
subset of strategic merge that pod templates need: maps merge recursively, ``null`` deletes a
key, lists with a patch merge key (containers by name, env by name, volumeMounts by mountPath,
...) merge item by item keeping the base order, every other list is replaced.

A TrainJob may carry many overrides, each with many list items, so the merge is linear in what
it reads: ``StrategicMerge`` copies the base once and merges every patch into that copy in place,
and finds a list item by its merge key in an index kept for the whole merge (built on the first
patch that reaches the list, extended as items are appended), never by scanning the list. A
patch's values are copied as they are written in, so neither the base nor a patch is changed.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

# Kubernetes' patchMergeKey for the list fields a runtime patch can reach.
MERGE_KEYS: dict[str, str] = {
    "replicatedJobs": "name",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "ports": "containerPort",
    "resourceClaims": "name",
}


def clone(value: Any) -> Any:
    """A deep copy of a JSON document (dicts, lists, scalars), much cheaper than ``copy.deepcopy``."""
    if isinstance(value, dict):
        return {key: clone(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clone(item) for item in value]
    return value


class _ListIndex:
    """Where each merge-key value first occurs in one list (what the merge looks items up by)."""

    def __init__(self, items: list[Any], key: str) -> None:
        self.items = items  # held, so the list (and its id) lives as long as the index
        self.positions: dict[Hashable, int] = {}
        self.unhashable = False
        for position, item in enumerate(items):
            if isinstance(item, dict):
                self.note(item.get(key), position)

    def note(self, value: Any, position: int) -> None:
        if isinstance(value, Hashable):
            self.positions.setdefault(value, position)
        else:
            self.unhashable = True  # a list or map as a key value: such lists are scanned instead

    def find(self, value: Any, key: str) -> int | None:
        if isinstance(value, Hashable) and not self.unhashable:
            return self.positions.get(value)
        for position, existing in enumerate(self.items):
            if isinstance(existing, dict) and existing.get(key) == value:
                return position
        return None


class StrategicMerge:
    """A working copy of ``base`` that patches are merged into, in order; read it from ``document``."""

    def __init__(self, base: Any) -> None:
        self.document = clone(base)
        self._indexes: dict[int, _ListIndex] = {}

    def apply(self, patch: Any) -> None:
        """Merge ``patch`` into the document (``patch`` itself is left as it is)."""
        self.document = self._merge(self.document, patch, "")

    def _merge(self, target: Any, patch: Any, field: str) -> Any:
        if isinstance(target, dict) and isinstance(patch, dict):
            for key, value in patch.items():
                if value is None:
                    target.pop(key, None)
                elif key in target:
                    target[key] = self._merge(target[key], value, key)
                else:
                    target[key] = clone(value)
            return target
        if isinstance(target, list) and isinstance(patch, list) and field in MERGE_KEYS:
            if not all(isinstance(item, dict) for item in patch):
                return clone(patch)  # not a list of keyed items after all: replaced whole
            return self._merge_keyed(target, patch, MERGE_KEYS[field])
        return clone(patch)

    def _merge_keyed(self, target: list[Any], patch: list[dict[str, Any]], key: str) -> list[Any]:
        index = self._indexes.get(id(target))
        if index is None or index.items is not target:
            index = self._indexes[id(target)] = _ListIndex(target, key)
        for item in patch:
            value = item.get(key)
            position = index.find(value, key)
            if position is None:
                target.append(clone(item))
                index.note(value, len(target) - 1)
            else:
                # the item keeps its key value, so the index stays right
                target[position] = self._merge(target[position], item, "")
        return target


def strategic_merge(base: Any, patch: Any) -> Any:
    """Return ``base`` with ``patch`` merged in; neither argument is modified."""
    merge = StrategicMerge(base)
    merge.apply(patch)
    return merge.document


def pod_template_override_as_patch(override: dict[str, Any], job_names: list[str]) -> dict[str, Any]:
    """A v2.1 ``podTemplateOverrides`` entry as the equivalent JobSet template patch."""
    pod_template: dict[str, Any] = {}
    if override.get("metadata"):
        pod_template["metadata"] = override["metadata"]
    if override.get("spec"):
        pod_template["spec"] = override["spec"]
    return {
        "spec": {
            "replicatedJobs": [{"name": name, "template": {"spec": {"template": pod_template}}} for name in job_names]
        }
    }
