"""Expected GPU fragmentation of nodes, measured against a mix of pod shapes.

After the measure of FGD (Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads
with Fragmentation Gradient Descent", USENIX ATC '23): for one pod shape, a node's fragmented GPU
capacity is what that shape cannot use there. If the shape does not fit the node at all (its CPU,
memory, model or GPUs are short), every free GPU of the node is fragmented for it; if it fits,
the fragments are the partly free GPUs with less left than the shape's share of one GPU (none
when GPUs are whole). A node's expected fragmentation is the weighted sum over the shapes of a
workload; placing a pod changes it only on the node that takes the pod, so a placement can be
judged by that one change (the "fragmentation gradient").

Two ways to see a node's GPUs: whole (Kubernetes extended resources; the free count is a row of
``free``) or shared (``devices``: each GPU's free share in thousandths, as the openb trace has
``gpu_milli``). Fragments are counted in thousandths of a GPU either way. Shapes that ask for no
GPU contribute nothing: in the paper's accounting they add the same amount whichever node takes
a pod, so they never change a choice.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from scheduler.topology.graph import IntArray

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
WHOLE = 1000  # one GPU, in thousandths
# resources that are not accelerators: fragmentation is counted on the others (GPUs)
NOT_ACCELERATORS = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})


class ShapeMix:
    """Pod shapes: the workload fragmentation is measured against.

    ``amounts`` is shapes × resources (one pod's amounts; the GPU row holds whole GPUs),
    ``share`` the thousandths of one GPU a pod takes on each of its ``gpus`` GPUs (1000 for
    whole GPUs) and ``pods`` how many pods of each were seen (read when ``by_pods`` is asked: the
    owner may go on counting into it). Shapes that ask for no GPU are left out. ``weights``
    (summing to 1) count every shape the same: trainyard's mix; ``by_pods`` weighs them by their
    pods, as the paper does.
    """

    def __init__(self, amounts: IntArray, share: IntArray, gpus: IntArray, pods: FloatArray) -> None:
        self.asks_gpu = gpus > 0
        self.amounts = amounts[self.asks_gpu]
        self.share = share[self.asks_gpu]
        self.gpus = gpus[self.asks_gpu]
        self._pods = pods
        self._source = (amounts, share, gpus)
        count = len(self.gpus)
        self.weights = np.full(count, 1.0 / count if count else 0.0, dtype=np.float64)
        self._others: tuple[int, IntArray, IntArray] | None = None  # (GPU row, the other rows, their needs)

    def __len__(self) -> int:
        return len(self.weights)

    @property
    def pods(self) -> FloatArray:
        counted: FloatArray = self._pods[self.asks_gpu]
        return counted

    def by_pods(self) -> ShapeMix:
        """The same shapes, each weighted by its share of the pods."""
        mix = ShapeMix(*self._source, self._pods)
        pods = mix.pods
        total = float(np.add.reduce(pods)) if len(pods) else 0.0
        if total > 0:
            mix.weights = pods / total
        return mix

    def other_rows(self, gpu_row: int) -> tuple[IntArray, IntArray]:
        """The resource rows besides the GPU's, and the shapes' needs there (shapes × rows)."""
        known = self._others
        if known is None or known[0] != gpu_row:
            rows = np.array([r for r in range(self.amounts.shape[1]) if r != gpu_row], dtype=np.int64)
            known = (gpu_row, rows, self.amounts[:, rows])
            self._others = known
        return known[1], known[2]


def expected_fragmentation(
    mix: ShapeMix, free: IntArray, eligible: BoolArray, gpu_row: int, devices: IntArray | None = None
) -> FloatArray:
    """Per column of ``free`` (resources × columns: a node's free amounts, perhaps after a
    tentative pod), the node's expected fragmented GPU capacity in thousandths of a GPU.
    ``eligible`` is the mix's shapes × columns: whether the shape may run on that node at all.

    With ``devices`` (columns × GPUs: each GPU's free thousandths, -1 past the node's last GPU)
    GPUs are shared and ``free``'s GPU row is not read; without, GPUs are whole.
    """
    if not len(mix):
        return np.zeros(free.shape[1], dtype=np.float64)
    rows, needs = mix.other_rows(gpu_row)
    others = free[rows]  # resources × columns, the GPU row aside
    fits = np.logical_and.reduce(others[None, :, :] >= needs[:, :, None], axis=1)  # shapes × columns
    fits &= eligible
    if devices is None:
        gpus = np.maximum(free[gpu_row], 0)
        fits &= gpus[None, :] >= mix.gpus[:, None]
        idle = gpus * WHOLE  # whole GPUs: a fitting shape leaves no fragment
        fragment = np.where(fits, 0, idle[None, :])
    else:
        held = np.maximum(devices, 0)  # columns × GPUs
        enough = devices[None, :, :] >= mix.share[:, None, None]  # shapes × columns × GPUs
        fits &= np.add.reduce(enough, axis=2) >= mix.gpus[:, None]
        short = np.add.reduce(np.where(enough, 0, held[None, :, :]), axis=2)  # free on GPUs too full for it
        fragment = np.where(fits, short, np.add.reduce(held, axis=1)[None, :])
    return np.asarray(mix.weights @ fragment, dtype=np.float64)


def least_growth(growth: FloatArray, held: IntArray, positions: IntArray) -> int:
    """The option whose fragmentation grows least; on a tie the one on the node holding the fewest
    pods of the shape (tightest), then the first in topology order. Growth is rounded so that
    sums of the same weights in another order still tie."""
    return int(np.lexsort((positions, held, np.round(growth, 6)))[0])


def accelerator_row(resources: tuple[str, ...], requests: Mapping[str, int]) -> int | None:
    """The row of the accelerator fragmentation is counted on: the first the pod asks for, else
    the flavor's first (a CPU-only pod still strands GPUs it leaves without CPU); None when the
    flavor's nodes have none."""
    rows = [i for i, resource in enumerate(resources) if resource not in NOT_ACCELERATORS]
    asked = [i for i in rows if requests.get(resources[i], 0) > 0]
    chosen = asked or rows
    return chosen[0] if chosen else None
