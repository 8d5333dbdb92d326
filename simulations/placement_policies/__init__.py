"""Placement policies to compare trainyard's placer with, all through one interface.

Each is a ``scheduler.topology.PlacementPolicy``: given a ``PlacementView`` (the nodes in topology
order, how many pods of the pod set's shape each holds, their free amounts, the domains per
level, the pod set's level, the recent shapes and, where GPUs are shared, each GPU's free share)
it returns a node per pod. The engine's admission decides around them as ever; a policy only
chooses nodes. They serve ``trainyard bench placement``, the saturation replay
(``simulations.saturation``) and ``trainyard simulate --compare-policies``.

==============  =============================================================================
trainyard       the engine's own placer (no policy): lowest tier, fewest domains, least
                fragmentation (``scheduler.topology``)
first-fit       nodes in topology order, each filled before the next
best-fit        the node with the fewest free GPUs that holds the pod
dot-product     Tetris's dot product of free resources and requests, smallest first
kueue-bestfit   Kueue TAS BestFit: the tightest domain that holds the pod set, largest first
kueue-leastfree Kueue TAS LeastFreeCapacity: domains by free capacity, smallest first
fgd             fragmentation gradient descent (ATC '23): the least growth of fragmentation
random          a node drawn at random among those with room
==============  =============================================================================
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from scheduler.topology.policy import PlacementPolicy
from simulations.placement_policies.baselines import FirstFit, RandomFit, first_fit, random_fit
from simulations.placement_policies.fgd import Fgd
from simulations.placement_policies.kueue_tas import KueueTas, kueue_best_fit, kueue_tas
from simulations.placement_policies.packing import BestFitGpus, DotProduct

TRAINYARD = "trainyard"

# name -> a factory given a seeded random generator (for the policies that draw)
FACTORIES: dict[str, Callable[[np.random.Generator], PlacementPolicy]] = {
    "first-fit": lambda rng: FirstFit(),
    "best-fit": lambda rng: BestFitGpus(),
    "dot-product": lambda rng: DotProduct(),
    "kueue-bestfit": lambda rng: KueueTas("kueue-bestfit", "best-fit"),
    "kueue-leastfree": lambda rng: KueueTas("kueue-leastfree", "least-free"),
    "fgd": lambda rng: Fgd(),
    "random": lambda rng: RandomFit(rng),
}
POLICIES = (TRAINYARD, *FACTORIES)


def placement_policy(name: str, rng: np.random.Generator) -> PlacementPolicy | None:
    """The policy named ``name``; None for trainyard (the placer's own choice). KeyError for a
    name not in ``POLICIES``."""
    if name == TRAINYARD:
        return None
    return FACTORIES[name](rng)


__all__ = [
    "POLICIES",
    "TRAINYARD",
    "first_fit",
    "kueue_best_fit",
    "kueue_tas",
    "placement_policy",
    "random_fit",
]
