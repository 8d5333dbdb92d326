"""What a sandbox is seeded with, from the simulations scenario catalogue."""

from __future__ import annotations

from collections import Counter

import pytest

from sandbox.scenario_objects import SANDBOX_SCENARIO, scenario_objects
from simulations.errors import SimulationInputError


def test_the_default_sandbox_is_small_and_in_apply_order() -> None:
    objects = scenario_objects()
    assert objects.scenario is SANDBOX_SCENARIO
    kinds = [d["kind"] for d in objects.documents]
    counts = Counter(kinds)
    assert counts["Node"] == 8
    assert counts["ClusterQueue"] == counts["LocalQueue"] == counts["Namespace"] == 4
    assert counts["Stage"] == len(objects.stages) == 4
    # namespaces before what lives in them, flavors and cohorts before the queues naming them
    assert kinds.index("Namespace") < kinds.index("LocalQueue")
    assert kinds.index("ResourceFlavor") < kinds.index("ClusterQueue")
    assert kinds.index("Cohort") < kinds.index("ClusterQueue")
    queue = next(objects.of_kind("LocalQueue"))
    assert queue["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert {n["metadata"]["name"] for n in objects.of_kind("Namespace")} == {
        q["metadata"]["namespace"] for q in objects.of_kind("LocalQueue")
    }
    node = next(objects.of_kind("Node"))
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "fake"


def test_a_built_in_scenario_by_name_and_a_clear_error_for_an_unknown_one() -> None:
    assert scenario_objects("gpu-1k").node_count == 1024
    with pytest.raises(SimulationInputError, match="no such scenario"):
        scenario_objects("no-such-scenario")
