"""`trainyard bench placement`: gang placement speed and quality on a fragmented 10,000-node cluster.

A 4-level topology (zones → spines → blocks → hosts, 8 GPUs per host) is loaded by a seeded
random background to about 60% of its GPUs, unevenly per block so that free capacity is
fragmented. Gangs of 8..2,048 pods of 8 GPUs (and of 1-, 2- and 4-GPU pods) are placed and then
released, many times, with a little background churn between repetitions. trainyard's placer is
compared in the same run with first-fit in node order and Kueue's TAS BestFit.

``p50_ms``/``p99_ms`` are wall milliseconds per placement; ``p99_cpu_ms`` is the same placements'
CPU time, which a machine busy with other work inflates less (the calibration is CPU time too).

Quality is measured against the lower bounds of shared/reference/placement.md §7: t* (the lowest
tier where one domain can hold the gang) and m* (the fewest child domains below it).
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from runtimes.k8s.core import Node
from scheduler.api.kueue import ResourceFlavor, Topology
from scheduler.topology import GangPlacement, GangRequest, PodSetRequest, TopologyPlacer
from scheduler.topology.graph import IntArray, TopologyIndex
from simulations.placement_policies import first_fit, kueue_best_fit

GPU = "nvidia.com/gpu"
LEVELS = (
    "topology.kubernetes.io/zone",
    "network.topology.nvidia.com/spine",
    "network.topology.nvidia.com/block",
    "kubernetes.io/hostname",
)
BLOCK_LEVEL = 3  # internal index of the block level (0 is the whole flavor)
GPUS_PER_NODE = 8
CPU_PER_GPU = 12_000  # milli-cpu
CASES = ((8, 8), (64, 8), (512, 8), (2048, 8), (8, 1), (64, 1), (64, 2), (512, 2), (64, 4), (512, 4))


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--zones", type=int, default=4)
    parser.add_argument("--spines", type=int, default=5, help="spines per zone")
    parser.add_argument("--blocks", type=int, default=10, help="blocks per spine")
    parser.add_argument("--hosts", type=int, default=50, help="hosts per block")
    parser.add_argument("--load", type=float, default=0.6, help="background share of GPUs in use")
    parser.add_argument("--repetitions", type=int, default=100, help="placements per case and policy")
    parser.add_argument("--seed", type=int, default=7)


def build_cluster(zones: int, spines: int, blocks: int, hosts: int) -> tuple[Topology, ResourceFlavor, list[Node]]:
    topology = Topology.model_validate(
        {"metadata": {"name": "gpu-fabric"}, "spec": {"levels": [{"nodeLabel": lv} for lv in LEVELS]}}
    )
    flavor = ResourceFlavor.model_validate(
        {"metadata": {"name": "h100"}, "spec": {"nodeLabels": {"pool": "h100"}, "topologyName": "gpu-fabric"}}
    )
    nodes: list[Node] = []
    for z in range(zones):
        for s in range(spines):
            for b in range(blocks):
                for h in range(hosts):
                    name = f"gpu-z{z}-s{s}-b{b:02d}-h{h:03d}"
                    labels = {
                        "pool": "h100",
                        LEVELS[0]: f"z{z}",
                        LEVELS[1]: f"z{z}-s{s}",
                        LEVELS[2]: f"z{z}-s{s}-b{b:02d}",
                        LEVELS[3]: name,
                    }
                    nodes.append(
                        Node.model_validate(
                            {
                                "metadata": {"name": name, "labels": labels},
                                "status": {
                                    "allocatable": {
                                        GPU: str(GPUS_PER_NODE),
                                        "cpu": str(GPUS_PER_NODE * CPU_PER_GPU // 1000 + 8),
                                    }
                                },
                            }
                        )
                    )
    return topology, flavor, nodes


def _busy_gpus(rng: np.random.Generator, block_load: float) -> int:
    """A node is wholly busy, partly busy or idle; busier blocks have more busy nodes."""
    draw = rng.random()
    if draw < block_load:
        return GPUS_PER_NODE
    if draw < block_load + (1 - block_load) * 0.35:
        return int(rng.integers(1, GPUS_PER_NODE))
    return 0


def _pod(gpus: int) -> dict[str, int]:
    return {GPU: gpus, "cpu": gpus * CPU_PER_GPU}


class Background:
    """Per-node background pods (1 GPU each), reserved on the placer and churned between runs."""

    def __init__(self, placer: TopologyPlacer, rng: np.random.Generator, load: float, hosts: int) -> None:
        self.placer = placer
        self.rng = rng
        index = placer.index
        blocks = index.counts[BLOCK_LEVEL]
        # per-block wholly-busy share, spread around the load so some blocks are nearly empty
        self.block_load = np.clip(rng.normal(load * 0.9, 0.25, size=blocks), 0.0, 0.97)
        self.by_node: dict[int, GangPlacement] = {}
        for i in range(index.size):
            self._set(i)

    def _set(self, node: int) -> None:
        old = self.by_node.pop(node, None)
        if old is not None:
            self.placer.release(old)
        block = int(self.placer.index.node_domain[BLOCK_LEVEL][node])
        busy = _busy_gpus(self.rng, float(self.block_load[block]))
        if busy:
            request = PodSetRequest("background", busy, _pod(1))
            name = self.placer.index.names[node]
            placement = GangPlacement(
                self.placer.flavor.name,
                (self.placer.describe_nodes(request, np.full(busy, node, dtype=np.int64)),),
            )
            self.placer.reserve(placement)
            self.by_node[node] = placement
            assert placement.pod_sets[0].nodes[0] == name

    def churn(self, nodes: int) -> None:
        for node in self.rng.choice(self.placer.index.size, size=nodes, replace=False).tolist():
            self._set(int(node))

    def used_share(self) -> float:
        row = self.placer.state.resource_index[GPU]
        return float(self.placer.state.used[row].sum() / self.placer.state.alloc[row].sum())


def lower_bounds(index: TopologyIndex, slots: IntArray, pods: int) -> tuple[int, int] | None:
    """(t*, m*) for a gang of ``pods`` given per-node slots, or None if it cannot fit at all."""
    last = index.depth - 1
    for level in range(last, -1, -1):
        caps = np.add.reduceat(slots, index.starts[level])
        if int(caps.max()) >= pods:
            break
    else:
        return None
    if level == last:
        return level, 1
    child_caps = np.add.reduceat(slots, index.starts[level + 1])
    best = None
    for domain in np.flatnonzero(caps >= pods).tolist():
        lo, hi = index.child_lo[level][domain], index.child_hi[level][domain]
        running = np.cumsum(np.sort(child_caps[lo:hi])[::-1])
        m = int(np.searchsorted(running, pods)) + 1
        best = m if best is None else min(best, m)
    assert best is not None
    return level, best


def lowest_common(index: TopologyIndex, nodes: IntArray) -> tuple[int, int]:
    last = index.depth - 1
    for level in range(last, -1, -1):
        ids = index.node_domain[level][nodes]
        if ids.min() == ids.max():
            spanned = 1 if level == last else len(np.unique(index.node_domain[level + 1][nodes]))
            return level, spanned
    return 0, 0


def _percentile(samples: list[float], q: float) -> float:
    return round(float(np.percentile(np.array(samples), q)), 4)


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng(args.seed)
    topology, flavor, nodes = build_cluster(args.zones, args.spines, args.blocks, args.hosts)
    placer = TopologyPlacer.build(topology, flavor, nodes)
    background = Background(placer, rng, args.load, args.hosts)
    load = background.used_share()
    # A long-lived scheduler freezes its startup heap so the collector does not walk 10,000
    # Node models in the middle of a placement; the benchmark measures it the same way.
    gc.collect()
    gc.freeze()
    cases: list[dict[str, Any]] = []
    for pods, gpus in CASES:
        repetitions = max(args.repetitions // 4, 5) if pods >= 2048 else args.repetitions
        stats = _measure_case(placer, background, pods, gpus, repetitions)
        cases.extend(_case_rows(pods, gpus, repetitions, stats))
    return {
        "nodes": placer.index.size,
        "gpus_per_node": GPUS_PER_NODE,
        "levels": list(LEVELS),
        "background_load_pct": round(100 * load, 2),
        "cases": cases,
    }


def _measure_case(
    placer: TopologyPlacer, background: Background, pods: int, gpus: int, repetitions: int
) -> dict[str, dict[str, Any]]:
    """Every policy places one gang ``repetitions`` times, the background churning in between:
    per policy its wall and CPU times and how often it placed, reached t* and m*."""
    index = placer.index
    request = GangRequest.of(PodSetRequest("workers", pods, _pod(gpus), preferred_level=LEVELS[BLOCK_LEVEL - 1]))
    shape = placer.state.shape(_pod(gpus))
    stats: dict[str, dict[str, Any]] = {
        policy: {"times": [], "cpu_times": [], "placed": 0, "tier": 0, "domains": 0, "feasible": 0}
        for policy in ("trainyard", "first-fit", "kueue-bestfit")
    }
    for _ in range(repetitions):
        background.churn(max(index.size // 200, 1))
        slots = placer.state.counts(shape).slots.copy()
        bounds = lower_bounds(index, slots, pods)
        policies: dict[str, Callable[[], IntArray | None]] = {
            "trainyard": lambda r=request: _trainyard(placer, r),  # type: ignore[misc]
            "first-fit": lambda s=slots, n=pods: first_fit(s, n),  # type: ignore[misc]
            "kueue-bestfit": lambda s=slots, n=pods: kueue_best_fit(index, s, n, BLOCK_LEVEL),  # type: ignore[misc]
        }
        for policy, place in policies.items():
            _time_placement(stats[policy], place, index, pods, bounds)
        _reserve_and_release(placer, request)
    return stats


def _time_placement(
    stats: dict[str, Any],
    place: Callable[[], IntArray | None],
    index: TopologyIndex,
    pods: int,
    bounds: tuple[int, int] | None,
) -> None:
    """One placement's times, and whether it placed the gang at the lower bounds ``bounds``."""
    began, cpu_began = time.perf_counter(), time.process_time()
    result = place()
    stats["times"].append((time.perf_counter() - began) * 1000)
    stats["cpu_times"].append((time.process_time() - cpu_began) * 1000)
    if bounds is None:
        return
    stats["feasible"] += 1
    if result is None or len(result) != pods:
        return
    stats["placed"] += 1
    level, spanned = lowest_common(index, result)
    if level == bounds[0]:
        stats["tier"] += 1
        if spanned == bounds[1]:
            stats["domains"] += 1


def _case_rows(pods: int, gpus: int, repetitions: int, stats: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for policy, s in stats.items():
        feasible = max(s["feasible"], 1)
        rows.append(
            {
                "pods": pods,
                "gpus_per_pod": gpus,
                "policy": policy,
                "repetitions": repetitions,
                "p50_ms": _percentile(s["times"], 50),
                "p99_ms": _percentile(s["times"], 99),
                "p99_cpu_ms": _percentile(s["cpu_times"], 99),
                "placed_pct": round(100 * s["placed"] / feasible, 2),
                "at_optimal_tier_pct": round(100 * s["tier"] / feasible, 2),
                "at_min_domains_pct": round(100 * s["domains"] / feasible, 2),
                "feasible_pct": round(100 * s["feasible"] / repetitions, 2),
            }
        )
    return rows


def _trainyard(placer: TopologyPlacer, request: GangRequest) -> IntArray | None:
    placement = placer.place(request)
    if not isinstance(placement, GangPlacement):
        return None
    position = placer.index.position
    return np.array([position[n] for n in placement.pod_sets[0].nodes], dtype=np.int64)


def _reserve_and_release(placer: TopologyPlacer, request: GangRequest) -> None:
    """Exercise the incremental path: reserve the gang, then release it (the state comes back)."""
    placement = placer.place(request)
    if isinstance(placement, GangPlacement):
        before = placer.state.free.sum()
        placer.reserve(placement)
        placer.release(placement)
        assert placer.state.free.sum() == before
