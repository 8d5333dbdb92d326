"""One checker for Kueue's TAS pod-set annotations: the webhook and the engine agree.

Every annotation set the webhook rejects the engine refuses too (with its own words, naming the
annotation), and the other way round, except the rule Kueue checks only when placing pods (the
count a multiple of the slice size), which only the engine applies.
"""

from __future__ import annotations

import pytest

from runtimes.k8s.core import PodTemplateSpec
from scheduler.api.job_validation import validate_podset_topology
from scheduler.api.kueue import (
    PODSET_GROUP_NAME,
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_SIZE,
    PODSET_UNCONSTRAINED_TOPOLOGY,
)
from scheduler.api.tas_annotations import PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS, check_podset_topology
from scheduler.topology import pod_set_request_from_template

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"

CASES: dict[str, dict[str, str]] = {
    "plain": {},
    "required": {PODSET_REQUIRED_TOPOLOGY: BLOCK},
    "two-modes": {PODSET_REQUIRED_TOPOLOGY: BLOCK, PODSET_UNCONSTRAINED_TOPOLOGY: "true"},
    "bad-label": {PODSET_PREFERRED_TOPOLOGY: "not a label/"},
    "bad-bool": {PODSET_UNCONSTRAINED_TOPOLOGY: "TRUE"},
    "slice": {PODSET_SLICE_REQUIRED_TOPOLOGY: RACK, PODSET_SLICE_SIZE: "4"},
    "slice-too-big": {PODSET_SLICE_REQUIRED_TOPOLOGY: RACK, PODSET_SLICE_SIZE: "16"},
    "slice-uneven": {PODSET_SLICE_REQUIRED_TOPOLOGY: RACK, PODSET_SLICE_SIZE: "3"},
    "size-alone": {PODSET_SLICE_SIZE: "2"},
    "constraints-and-slice": {
        PODSET_SLICE_REQUIRED_TOPOLOGY: RACK,
        PODSET_SLICE_SIZE: "2",
        PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: f'[{{"topology": "{RACK}", "size": 2}}]',
    },
    "constraints-bad-json": {PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: "[{"},
    "group": {PODSET_GROUP_NAME: "g", PODSET_REQUIRED_TOPOLOGY: BLOCK},
    "group-alone": {PODSET_GROUP_NAME: "g"},
    "group-number": {PODSET_GROUP_NAME: "7", PODSET_PREFERRED_TOPOLOGY: BLOCK},
}
PLACEMENT_ONLY = {"slice-uneven"}


def _template(annotations: dict[str, str]) -> PodTemplateSpec:
    return PodTemplateSpec.model_validate(
        {"metadata": {"annotations": annotations}, "spec": {"containers": [{"name": "t"}]}}
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_webhook_and_engine_apply_the_same_rules(case: str) -> None:
    annotations = CASES[case]
    webhook = validate_podset_topology(annotations, 8, "spec.podSets[w]")
    try:
        pod_set_request_from_template("w", 8, _template(annotations))
        engine_error = None
    except ValueError as error:
        engine_error = str(error)
    if case in PLACEMENT_ONLY:
        assert not webhook
        assert engine_error is not None
        assert "not a multiple" in engine_error
        return
    assert bool(webhook) == (engine_error is not None), (webhook, engine_error)
    if engine_error is not None:
        assert engine_error.startswith("pod set 'w': ")
        assert "kueue.x-k8s.io/podset" in engine_error
        assert all(e.path.startswith("spec.podSets[w]") for e in webhook)


def test_the_values_read_are_what_the_annotations_say() -> None:
    topology, problems = check_podset_topology(CASES["slice"], 8)
    assert not problems
    assert (topology.slice_level, topology.slice_size, topology.required) == (RACK, 4, None)
    topology, _ = check_podset_topology({PODSET_UNCONSTRAINED_TOPOLOGY: "true"}, 1)
    assert topology.unconstrained
