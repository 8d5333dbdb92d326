"""GPU topology graphs and all-or-nothing gang placement for TAS ResourceFlavors.

The engine builds one ``TopologyPlacer`` per TAS ResourceFlavor and calls ``place`` (pure),
then ``reserve``/``release``; ``update_node``/``remove_node`` keep it current and
``replace_failed_node`` moves a failed node's pods.

As with the engine, ``make install`` compiles the placement modules with mypyc and they run
compiled while they match their sources (``scheduler.native``).
"""

from scheduler.native import activate as _activate_native

_activate_native(__path__, __name__)  # before any submodule is imported: the imports below must follow it

from scheduler.topology.capacity import CapacityState  # noqa: E402
from scheduler.topology.failures import replace_failed_node  # noqa: E402
from scheduler.topology.graph import (  # noqa: E402
    HOSTNAME_LABEL,
    NVLINK_CLIQUE_LABEL,
    NodeInfo,
    TopologyGraph,
    TopologyIndex,
    build_topology_graph,
)
from scheduler.topology.metrics import FreeCapacity  # noqa: E402
from scheduler.topology.model import (  # noqa: E402
    GangPlacement,
    GangRequest,
    PlacementFailure,
    PodSetPlacement,
    PodSetRequest,
    pod_set_request_from_template,
)
from scheduler.topology.placer import TopologyPlacer  # noqa: E402

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
