"""FGD, fragmentation gradient descent (Weng et al., USENIX ATC '23), from the paper's description.

Each pod goes to the node, and where GPUs are shared to the GPU, whose expected fragmentation
grows least (the steepest descent of the cluster's fragmentation): the measure is
``scheduler.topology.fragmentation`` (the same one trainyard's placer reads), against the mix of
pod shapes in the view. Every node that holds the pod is compared; ties go to topology order
(the paper's Kubernetes scheduler breaks them at random).

Where this differs from the paper's runs, which the saturation report states beside the figures:
the paper measures against the trace's whole pod distribution, known in advance; here the mix is
the shapes that arrived so far (the replay) or that the placer was asked for lately (the
timeline), since a scheduler does not know its future. A pod fits a node when its memory fits
too (the paper's measure names CPU and GPU).
"""

from __future__ import annotations

import numpy as np

from scheduler.topology.fragmentation import ShapeMix
from scheduler.topology.graph import IntArray
from scheduler.topology.least_fragmenting import device_options, option_growth
from scheduler.topology.policy import Chosen, PlacementView
from simulations.placement_policies.greedy import PodByPod, pod_by_pod


class Fgd:
    name = "fgd"

    def choose(self, view: PlacementView) -> Chosen | None:
        by_pods = None if view.mix is None else view.mix.by_pods()  # the paper weighs shapes by their pods
        return pod_by_pod(view, lambda state, candidates: _least_growth_pod(state, candidates, by_pods))


def _least_growth_pod(state: PodByPod, candidates: IntArray, mix: ShapeMix | None) -> tuple[int, int | None]:
    """The option (node, GPU) for one pod whose fragmentation grows least, first in topology order."""
    view = state.view
    live = PlacementView(
        view.index,
        state.slots,
        state.free,
        view.allocatable,
        view.resources,
        view.per_pod,
        1,
        gpu_row=view.gpu_row,
        mix=mix,
        mix_eligible=view.mix_eligible,
        devices=state.devices,
        share=view.share,
        gpus=view.gpus_per_pod,
    )
    if state.devices is None:
        growth = option_growth(live, candidates, None)
        return int(candidates[int(np.argmin(np.round(growth, 6)))]), None
    nodes, after, used = device_options(state.devices, candidates, view.share, state.gpus)
    best = int(np.argmin(np.round(option_growth(live, nodes, after), 6)))
    return int(nodes[best]), None if used[best] < 0 else int(used[best])
