"""Strategic merge of runtimePatches / podTemplateOverrides over a runtime's JobSet template.

Trainer applies each ``runtimePatches`` entry with Kubernetes' strategic-merge-patch over the
JobSet template, in list order (``mergeRuntimePatches`` in ``pkg/runtime/core``). This is the
subset of strategic merge that pod templates need: maps merge recursively, ``null`` deletes a
key, lists with a patch merge key (containers by name, env by name, volumeMounts by mountPath,
...) merge item by item keeping the base order, every other list is replaced.
"""

from __future__ import annotations

import copy
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


def strategic_merge(base: Any, patch: Any, field: str = "") -> Any:
    """Return ``base`` with ``patch`` merged in; neither argument is modified."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = copy.deepcopy(base)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = strategic_merge(merged[key], value, key)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    if isinstance(base, list) and isinstance(patch, list) and field in MERGE_KEYS:
        key = MERGE_KEYS[field]
        merged_list = copy.deepcopy(base)
        for item in patch:
            if not isinstance(item, dict):
                return copy.deepcopy(patch)
            for index, existing in enumerate(merged_list):
                if isinstance(existing, dict) and existing.get(key) == item.get(key):
                    merged_list[index] = strategic_merge(existing, item)
                    break
            else:
                merged_list.append(copy.deepcopy(item))
        return merged_list
    return copy.deepcopy(patch)


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
