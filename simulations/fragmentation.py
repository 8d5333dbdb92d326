"""GPU fragmentation of a simulated cluster: free GPUs that the waiting work cannot use."""

from __future__ import annotations

from collections import Counter

import numpy as np
import numpy.typing as npt

from simulations.invariants import GPU, NodeLedger

IntArray = npt.NDArray[np.int64]


def stranded_gpus(free: IntArray, per_pod: int, pods: int) -> IntArray:
    """Per node, the free GPUs that cannot host a gang of ``pods`` pods of ``per_pod`` GPUs each:
    those on nodes with fewer than ``per_pod`` free, or every free one if the gang fits nowhere.
    The dashboard's topology page shows the same per domain."""
    if per_pod == 0:
        return np.zeros_like(free)
    hosts = free >= per_pod
    if int((free[hosts] // per_pod).sum()) < pods:
        return free
    return np.where(hosts, 0, free)


def fragmented_gpus(ledger: NodeLedger, pending_shapes: Counter[tuple[int, int, int]]) -> int:
    """Free GPUs that cannot host the smallest pending gang (all free ones if it fits nowhere).

    ``pending_shapes`` counts waiting gangs by (total GPUs, GPUs per pod, pods).
    """
    if not pending_shapes or not ledger.names:
        return 0
    _, per_pod, pods = min(pending_shapes)
    free = np.where(ledger.ready, ledger.free()[:, GPU], 0)
    return int(stranded_gpus(free, per_pod, pods).sum())
