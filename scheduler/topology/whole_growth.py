"""The fragmentation measure for the placer's hot path: whole GPUs, shapes weighing the same, in ints.

``expected_fragmentation`` (numpy, any mix, whole or shared GPUs) costs a few dozen array calls
per choice, several hundred microseconds on the scheduler's hot path; with whole GPUs and every
shape weighing the same it reduces to counting: a node's expected fragmentation is its free GPUs
times the share of shapes that do not fit it (or may not run there). ``WholeGpuTable`` holds the
recent GPU shapes as plain ints and, per node, which of them may run there, and answers the
growth of that count for one node taking some pods: the same order as ``expected_fragmentation``
(a test holds them equal), by a few hundred integer comparisons of compiled code.
"""

from __future__ import annotations

from collections.abc import Sequence

_KNOWN_LIMIT = 1 << 16  # growths kept per table before they are forgotten


class WholeGpuTable:
    """Recent GPU shapes as ints: ``needs[s]`` is one pod's amounts over the state's resources,
    ``node_kind[node]`` groups nodes by which shapes may run there, ``kind_eligible[kind][s]``."""

    def __init__(self, needs: list[list[int]], node_kind: list[int], kind_eligible: list[list[bool]]) -> None:
        self.needs = needs
        self.node_kind = node_kind
        self.kind_eligible = kind_eligible
        # growths already counted, per (amounts taken, GPU row), then per node kind, by free
        # amounts: a growth reads nothing else, and the table never changes once built
        self._known: dict[tuple[tuple[int, ...], int], list[dict[tuple[int, ...], int]]] = {}
        self._known_count = 0

    def known_growths(self, taken: tuple[int, ...], gpu_row: int) -> list[dict[tuple[int, ...], int]]:
        """Per node kind, free amounts -> ``growth`` for ``taken`` leaving them: filled by the
        caller (``remember``), kept while the table lives."""
        key = (taken, gpu_row)
        known = self._known.get(key)
        if known is None:
            if self._known_count >= _KNOWN_LIMIT:
                self._known.clear()
                self._known_count = 0
            known = self._known[key] = [{} for _ in self.kind_eligible]
        return known

    def remember(self, known: dict[tuple[int, ...], int], free: tuple[int, ...], growth: int) -> None:
        """Keep one growth in a dict ``known_growths`` gave."""
        known[free] = growth
        self._known_count += 1

    def growth(self, node: int, free: Sequence[int], taken: Sequence[int], gpu_row: int) -> int:
        """How much node ``node``'s fragmentation grows when ``taken`` leaves its ``free``
        amounts: (shapes that will not fit) × GPUs left, less (shapes that do not fit) × GPUs
        free now; the number of shapes times the growth in GPUs (each shape weighing 1/shapes)."""
        width = len(free)
        after = [free[r] - taken[r] for r in range(width)]
        eligible = self.kind_eligible[self.node_kind[node]]
        unfit_before = 0
        unfit_after = 0
        for s in range(len(self.needs)):
            if not eligible[s]:
                unfit_before += 1
                unfit_after += 1
                continue
            need = self.needs[s]
            fits_before = True
            fits_after = True
            for r in range(width):
                if free[r] < need[r]:
                    fits_before = False
                if after[r] < need[r]:
                    fits_after = False
            if not fits_before:
                unfit_before += 1
            if not fits_after:
                unfit_after += 1
        return unfit_after * max(after[gpu_row], 0) - unfit_before * max(free[gpu_row], 0)
