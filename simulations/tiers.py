"""t*, the best placement tier a gang could have had, from per-domain free pod slots kept current.

The placement-quality metric compares the tier the engine achieved with t*: the deepest
topology level with one domain able to host the whole gang when it was admitted. Recounting
every node's free slots for every admission is a pass over all nodes and resources each time
(10,000 nodes × 4 resources in the benchmark, for every multi-node admission). Instead each
(pod shape, eligible-node mask) keeps its per-node slots and per-domain sums, and on a query
recounts only the nodes whose usage or eligibility changed since it was last asked: the node
ledger reports every node a placement or release touched. Slots and sums are the same int64
arithmetic as a full recount (integer sums do not depend on the order of the additions), so
t* is exact.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

# Keep this many touched-node batches; a cache that fell further behind recounts every node.
MAX_PENDING_BATCHES = 8192
# (shape, mask) caches kept; a caller that builds a new mask per call gets plain recounts.
MAX_CACHES = 16


class _ShapeSlots:
    """Free pod slots of one shape on every eligible node, and their sum per domain per level."""

    __slots__ = ("eligible", "flat", "mask", "position", "slots", "sums")

    def __init__(self, mask: np.ndarray) -> None:
        self.mask = mask  # the caller's array; held so its id is not reused while cached
        self.eligible = np.zeros(0, dtype=bool)  # mask & Ready, as last counted
        self.slots = np.zeros(0, dtype=np.int64)
        self.flat = np.zeros(0, dtype=np.int64)  # every level's per-domain sums, end to end
        self.sums: list[np.ndarray] = []  # views into flat, one per level, top down
        self.position = -1  # change-log position counted up to; -1: never counted


class BestTier:
    """Answers t* for a gang shape over a node ledger's live ``used`` and ``ready`` arrays.

    ``allocatable``, ``used`` and ``ready`` are the ledger's own arrays, read at query time
    (the ledger changes them in place); ``touched`` must be told every node whose ``used``
    row changed. ``ready`` and the eligible mask are compared on every query instead, since
    callers flip ``ready`` directly.
    """

    def __init__(
        self,
        allocatable: np.ndarray,
        used: np.ndarray,
        ready: np.ndarray,
        domains: np.ndarray,
        domain_order: Sequence[np.ndarray | None],
        domain_starts: Sequence[np.ndarray],
    ) -> None:
        self._allocatable = allocatable
        self._used = used
        self._ready = ready
        self._domains = domains
        self._domain_order = domain_order
        self._domain_starts = domain_starts
        # where each level's domain sums start in a cache's flat array (domain ids count from 0)
        counts = [len(starts) for starts in domain_starts]
        self._level_offsets = (np.cumsum([0, *counts], dtype=np.int64)[:-1]).reshape(-1, 1)
        self._batches: list[np.ndarray] = []
        self._first_position = 0  # change-log position of self._batches[0]
        self._caches: OrderedDict[tuple[str, int], _ShapeSlots] = OrderedDict()

    def touched(self, indexes: np.ndarray) -> None:
        """Nodes whose usage just changed (a placement or a release)."""
        self._batches.append(indexes)
        if len(self._batches) > 2 * MAX_PENDING_BATCHES:
            del self._batches[:MAX_PENDING_BATCHES]
            self._first_position += MAX_PENDING_BATCHES

    def best_level(self, pods: int, amounts: np.ndarray, eligible: np.ndarray) -> int:
        """The deepest level with one domain whose free slots hold ``pods`` pods; -1: none."""
        if not len(self._ready):
            return -1
        cache = self._cache(amounts, eligible)
        self._catch_up(cache, amounts, eligible)
        for depth in range(len(self._domain_starts) - 1, -1, -1):
            if int(cache.sums[depth].max()) >= pods:
                return depth
        return -1

    # ------------------------------------------------------------------------------ internals

    def _cache(self, amounts: np.ndarray, eligible: np.ndarray) -> _ShapeSlots:
        key = (amounts.dtype.str + amounts.tobytes().hex(), id(eligible))
        cache = self._caches.get(key)
        if cache is None or cache.mask is not eligible:
            cache = _ShapeSlots(eligible)
            self._caches[key] = cache
            if len(self._caches) > MAX_CACHES:
                self._caches.popitem(last=False)
        else:
            self._caches.move_to_end(key)
        return cache

    def _slots_of(self, amounts: np.ndarray, nodes: np.ndarray | slice, eligible: np.ndarray) -> np.ndarray:
        """``min_r ⌊free_r / request_r⌋`` over requested resources, 0 where not eligible."""
        columns = np.flatnonzero(amounts > 0)
        if not len(columns):  # nothing requested: unbounded, as the minimum's starting value
            slots = np.full(len(eligible), np.iinfo(np.int64).max, dtype=np.int64)
        else:
            free = self._allocatable[nodes][:, columns] - self._used[nodes][:, columns]
            slots = (free // amounts[columns]).min(axis=1)
        return np.where(eligible, np.maximum(slots, 0), 0)

    def _catch_up(self, cache: _ShapeSlots, amounts: np.ndarray, eligible: np.ndarray) -> None:
        now_eligible = eligible & self._ready
        end = self._first_position + len(self._batches)
        if cache.position < self._first_position:
            # never counted, or fell behind the kept batches: count every node
            cache.slots = self._slots_of(amounts, slice(None), now_eligible)
            per_level = []
            for depth, starts in enumerate(self._domain_starts):
                order = self._domain_order[depth]
                per_node = cache.slots if order is None else cache.slots[order]
                per_level.append(np.add.reduceat(per_node, starts))
            cache.flat = np.concatenate(per_level) if per_level else np.zeros(0, dtype=np.int64)
            bounds = [*self._level_offsets[:, 0].tolist(), len(cache.flat)]
            cache.sums = [cache.flat[bounds[d] : bounds[d + 1]] for d in range(len(per_level))]
        else:
            pending = self._batches[cache.position - self._first_position :]
            flipped = np.flatnonzero(now_eligible != cache.eligible)
            if not pending and not len(flipped):
                cache.eligible = now_eligible
                cache.position = end
                return
            nodes = np.unique(np.concatenate([*pending, flipped]))
            fresh = self._slots_of(amounts, nodes, now_eligible[nodes])
            delta = fresh - cache.slots[nodes]
            cache.slots[nodes] = fresh
            # one ufunc.at for every level: cache.sums are views into cache.flat, levels end to end
            domains = (self._domains[:, nodes] + self._level_offsets).ravel()
            np.add.at(cache.flat, domains, np.tile(delta, len(self._domain_starts)))
        cache.eligible = now_eligible
        cache.position = end
