"""GPU fragmentation of a simulated cluster: free GPUs that the waiting work cannot use."""

from __future__ import annotations

from collections import Counter

import numpy as np

from simulations.invariants import GPU, NodeLedger


def fragmented_gpus(ledger: NodeLedger, pending_shapes: Counter[tuple[int, int, int]]) -> int:
    """Free GPUs that cannot host the smallest pending gang (all free ones if it fits nowhere).

    ``pending_shapes`` counts waiting gangs by (total GPUs, GPUs per pod, pods).
    """
    if not pending_shapes or not ledger.names:
        return 0
    _, per_pod, pods = min(pending_shapes)
    free = np.where(ledger.ready, ledger.free()[:, GPU], 0)
    if per_pod == 0:
        return 0
    hosts = free >= per_pod
    if int((free[hosts] // per_pod).sum()) < pods:
        return int(free.sum())
    return int(free[~hosts].sum())
