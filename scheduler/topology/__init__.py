"""GPU topology graphs and all-or-nothing gang placement for TAS ResourceFlavors.

The engine builds one ``TopologyPlacer`` per TAS ResourceFlavor and calls ``place`` (pure),
then ``reserve``/``release``; ``update_node``/``remove_node`` keep it current and
``replace_failed_node`` moves a failed node's pods.
"""

from scheduler.topology.capacity import CapacityState
from scheduler.topology.failures import replace_failed_node
from scheduler.topology.graph import (
    HOSTNAME_LABEL,
    NVLINK_CLIQUE_LABEL,
    NodeInfo,
    TopologyGraph,
    TopologyIndex,
    build_topology_graph,
)
from scheduler.topology.metrics import FreeCapacity
from scheduler.topology.model import (
    GangPlacement,
    GangRequest,
    PlacementFailure,
    PodSetPlacement,
    PodSetRequest,
    pod_set_request_from_template,
)
from scheduler.topology.placer import TopologyPlacer

__all__ = [
    "HOSTNAME_LABEL",
    "NVLINK_CLIQUE_LABEL",
    "CapacityState",
    "FreeCapacity",
    "GangPlacement",
    "GangRequest",
    "NodeInfo",
    "PlacementFailure",
    "PodSetPlacement",
    "PodSetRequest",
    "TopologyGraph",
    "TopologyIndex",
    "TopologyPlacer",
    "build_topology_graph",
    "pod_set_request_from_template",
    "replace_failed_node",
]
