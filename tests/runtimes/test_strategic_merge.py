"""The strategic merge of overrides and runtime patches: Kubernetes' rules, in linear work.

The reference below is the rule written as plainly as possible (copy everything, scan lists for
the merge key); the merge in ``runtimes.plugins.patches`` must give the same documents while
doing work proportional to what it reads. Work is counted in Python function calls, which is
deterministic, rather than timed.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from runtimes.api.trainer import ClusterTrainingRuntime, TrainJob
from runtimes.plugins.info import merged_template
from runtimes.plugins.patches import MERGE_KEYS, StrategicMerge, strategic_merge

ROOT = Path(__file__).resolve().parents[2]


def reference_merge(base: Any, patch: Any, field: str = "") -> Any:
    """Strategic merge as Kubernetes states it, one patch at a time, copying everything."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = copy.deepcopy(base)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = reference_merge(merged[key], value, key)
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
                    merged_list[index] = reference_merge(existing, item)
                    break
            else:
                merged_list.append(copy.deepcopy(item))
        return merged_list
    return copy.deepcopy(patch)


# Documents over a few field names, some of them merge-keyed lists, so patches collide often.
FIELDS = ["env", "containers", "volumeMounts", "ports", "args", "spec", "metadata"]
scalars = st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["a", "b", "c"]), st.booleans())
keyed_item = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["a", "b", "c"]),
        "mountPath": st.sampled_from(["/x", "/y"]),
        "containerPort": st.integers(1, 3),
        "value": scalars,
    },
)
documents = st.recursive(
    scalars | keyed_item,
    lambda inner: (
        st.lists(inner | keyed_item, max_size=4) | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4)
    ),
    max_leaves=24,
)
bases = st.dictionaries(st.sampled_from(FIELDS), documents, max_size=4)


@settings(max_examples=150)
@given(bases, st.lists(documents, min_size=1, max_size=4))
def test_merging_patches_in_order_gives_what_the_rule_gives(base: dict[str, Any], patches: list[Any]) -> None:
    frozen_base, frozen_patches = json.dumps(base), json.dumps(patches)
    expected: Any = base
    for patch in patches:
        expected = reference_merge(expected, patch)
    merge = StrategicMerge(base)
    for patch in patches:
        merge.apply(patch)
    assert merge.document == expected
    assert strategic_merge(base, patches[0]) == reference_merge(base, patches[0])
    # neither the base nor a patch was changed, and nothing of a patch is shared with the result
    assert (json.dumps(base), json.dumps(patches)) == (frozen_base, frozen_patches)
    merge.apply({"spec": {"containers": [{"name": "a", "env": [{"name": "a", "value": "changed"}]}]}})
    assert json.dumps(patches) == frozen_patches


def test_items_merge_by_their_key_and_keep_the_base_order() -> None:
    base = {"containers": [{"name": "node", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}
    merge = StrategicMerge(base)
    merge.apply({"containers": [{"name": "node", "env": [{"name": "C", "value": "3"}, {"name": "A", "value": "9"}]}]})
    merge.apply({"containers": [{"name": "node", "env": [{"name": "B", "value": None}, {"name": "C", "value": "4"}]}]})
    merge.apply({"containers": [{"name": "sidecar", "image": "s"}], "args": ["replaced"]})
    assert merge.document == {
        "containers": [
            {"name": "node", "env": [{"name": "A", "value": "9"}, {"name": "B"}, {"name": "C", "value": "4"}]},
            {"name": "sidecar", "image": "s"},
        ],
        "args": ["replaced"],
    }


def _runtime() -> ClusterTrainingRuntime:
    document = yaml.safe_load((ROOT / "manifests" / "runtimes" / "torch_distributed.yaml").read_text())
    return ClusterTrainingRuntime.model_validate(document)


def _trainjob(overrides: int, env: int) -> TrainJob:
    """``overrides`` podTemplateOverrides on the node job, each adding ``env`` new variables."""
    entries = [
        {
            "targetJobs": [{"name": "node"}],
            "spec": {
                "containers": [{"name": "node", "env": [{"name": f"V{i}_{j}", "value": "x"} for j in range(env)]}]
            },
        }
        for i in range(overrides)
    ]
    document = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "wide", "namespace": "team-a"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "podTemplateOverrides": entries},
    }
    return TrainJob.model_validate(document)


def _python_calls(work: Callable[[], object]) -> int:
    calls = 0

    def count(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        work()
    finally:
        sys.setprofile(None)
    return calls


def test_merging_overrides_is_linear_in_their_number() -> None:
    runtime = _runtime()
    small, large = _trainjob(8, 32), _trainjob(32, 32)
    merged = merged_template(large, runtime)
    (node,) = [job for job in merged["spec"]["replicatedJobs"] if job["name"] == "node"]
    container = node["template"]["spec"]["template"]["spec"]["containers"][0]
    assert {f"V{i}_{j}" for i in range(32) for j in range(32)} <= {e["name"] for e in container["env"]}
    few = _python_calls(lambda: merged_template(small, runtime))
    many = _python_calls(lambda: merged_template(large, runtime))
    # four times the overrides (and a list four times as long): about four times the work, where a
    # merge that copies the template or scans the list per override does about sixteen times
    assert many < 5 * few, (few, many)
