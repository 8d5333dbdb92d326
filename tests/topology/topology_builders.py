"""Small builders for topology tests: a Topology, a TAS flavor and labelled GPU nodes."""

from __future__ import annotations

from typing import Any

from runtimes.k8s.core import Node
from scheduler.api.kueue import ResourceFlavor, Topology

ZONE = "topology.kubernetes.io/zone"
BLOCK = "network.topology.nvidia.com/block"
HOST = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
LEVELS = (ZONE, BLOCK, HOST)


def topology(levels: tuple[str, ...] = LEVELS) -> Topology:
    return Topology.model_validate(
        {"metadata": {"name": "fabric"}, "spec": {"levels": [{"nodeLabel": x} for x in levels]}}
    )


def flavor(**spec: Any) -> ResourceFlavor:
    body = {"nodeLabels": {"pool": "gpu"}, "topologyName": "fabric", **spec}
    return ResourceFlavor.model_validate({"metadata": {"name": "gpu"}, "spec": body})


def node(
    name: str,
    zone: str,
    block: str,
    gpus: int = 8,
    *,
    ready: bool = True,
    unschedulable: bool = False,
    taints: list[dict[str, str]] | None = None,
    labels: dict[str, str] | None = None,
    cpu: str = "64",
) -> Node:
    all_labels = {"pool": "gpu", ZONE: zone, BLOCK: block, HOST: name, **(labels or {})}
    return Node.model_validate(
        {
            "metadata": {"name": name, "labels": all_labels},
            "spec": {"unschedulable": unschedulable, "taints": taints or []},
            "status": {
                "allocatable": {GPU: str(gpus), "cpu": cpu},
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }
    )


def grid(shape: list[list[int]]) -> list[Node]:
    """``shape[z][b]`` hosts in block b of zone z, named n-z-b-h."""
    return [
        node(f"n-{z}-{b}-{h}", f"z{z}", f"b{z}{b}")
        for z, blocks in enumerate(shape)
        for b, hosts in enumerate(blocks)
        for h in range(hosts)
    ]
