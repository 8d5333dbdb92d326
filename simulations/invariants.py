"""Invariants checked on every admission of every run, from the engine's outputs alone.

The checker never asks the engine whether it is right. It keeps its own ledgers, built from
the Kueue objects, the Nodes, each job's requests and the admissions and placements the
engine returned:

- **no node over capacity**: the pods placed on a node never request more cpu, memory, GPUs
  or pod slots than its allocatable, and no pod lands on a node that is not Ready;
- **no quota exceeded**: a ClusterQueue's usage of each (flavor, resource) stays within its
  nominal quota plus its borrowing limit (nominal only outside a cohort), every cohort's
  subtree usage stays within its subtree's nominal quota, and the usage the engine charged
  equals the job's requests times the admitted pod count;
- **every admitted gang complete or absent**: every pod of an admitted gang is admitted
  (no partial count) and, on a TAS flavor, placed on a node; a gang's pods are released
  together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import ClusterQueue, Cohort, ResourceFlavor
from simulations.cluster_spec import GPU_RESOURCE
from simulations.tiers import BestTier
from simulations.workloads import JobSpec

# Columns of the node ledger.
RESOURCES = ("cpu", "memory", GPU_RESOURCE, "pods")
CPU, MEMORY, GPU, PODS = range(4)
MAX_VIOLATIONS_KEPT = 100


def pod_requests(job: JobSpec) -> tuple[int, int, int, int]:
    """Per-pod requests in the engine's integer units (cpu millicores, memory bytes, GPUs, pods)."""
    return (job.cpu_milli, job.memory_mib * 1024 * 1024, job.gpus_per_node, 1)


def pod_amounts(job: JobSpec) -> np.ndarray:
    """``pod_requests`` as an int64 row of the node ledger's columns: one shared, read-only
    array per request shape (a run has a handful of shapes and an admission asks twice)."""
    requests = pod_requests(job)
    amounts = _AMOUNTS.get(requests)
    if amounts is None:
        amounts = np.array(requests, dtype=np.int64)
        amounts.setflags(write=False)
        _AMOUNTS[requests] = amounts
    return amounts


_AMOUNTS: dict[tuple[int, int, int, int], np.ndarray] = {}


def _at(now: float) -> str:
    # a violation's timestamp, formatted only when there is a violation to report
    return f"t={now:.3f}s"


class NodeLedger:
    """What is placed on every node, as numpy columns (cpu, memory, GPUs, pods)."""

    def __init__(self, nodes: Sequence[Node], levels: Sequence[str] = ()) -> None:
        self.names = [node.name for node in nodes]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.labels = [dict(node.metadata.labels) for node in nodes]
        count = len(nodes)
        self.allocatable = np.zeros((count, len(RESOURCES)), dtype=np.int64)
        for i, node in enumerate(nodes):
            allocatable = node.status.allocatable or node.status.capacity
            for j, resource in enumerate(RESOURCES):
                quantity = allocatable.get(resource)
                self.allocatable[i, j] = (
                    quantity.amount(resource) if quantity is not None else (110 if j == PODS else 0)
                )
        self.used = np.zeros_like(self.allocatable)
        self.ready = np.array([node.ready and not node.spec.unschedulable for node in nodes], dtype=bool)
        self.levels = tuple(levels)
        # domain id of every node at every level (top→down), for placement tiers
        self.domains = np.zeros((len(self.levels), count), dtype=np.int64)
        for depth in range(len(self.levels)):
            ids: dict[tuple[str, ...], int] = {}
            for i, labels in enumerate(self.labels):
                path = tuple(labels.get(label_above, "") for label_above in self.levels[: depth + 1])
                self.domains[depth, i] = ids.setdefault(path, len(ids))
        self.placed: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # key -> (node indexes, per-pod amounts)
        # reads ready in place: callers flip it, never rebind it
        self._best_tier = BestTier(self.names, self.labels, self.allocatable, self.ready, self.levels, RESOURCES)

    @property
    def gpu_capacity(self) -> int:
        return int(self.allocatable[:, GPU].sum())

    @property
    def gpus_used(self) -> int:
        return int(self.used[:, GPU].sum())

    def free(self) -> np.ndarray:
        return self.allocatable - self.used

    def place(self, key: str, nodes: Sequence[str], amounts: np.ndarray) -> list[str]:
        index = self.index
        try:
            positions = [index[n] for n in nodes]
        except KeyError:
            unknown = next(n for n in nodes if n not in index)
            return [f"{key}: placed on unknown node {unknown}"]
        problems = []
        indexes = np.array(positions, dtype=np.int64)
        if len(positions) == 1:
            # one pod: scalar reads and a plain in-place row add, no fancy indexing or ufunc.at
            i = positions[0]
            if not self.ready[i]:
                problems.append(f"{key}: pod placed on node {self.names[i]}, which is not Ready")
            row = self.used[i]
            row += amounts
            over = bool((row > self.allocatable[i]).any())
        else:
            ready = self.ready[indexes]
            if not ready.all():
                first = int(indexes[int(np.argmin(ready))])  # argmin: the first pod on a node not Ready
                problems.append(f"{key}: pod placed on node {self.names[first]}, which is not Ready")
            np.add.at(self.used, indexes, amounts)  # a node may host several pods of the gang
            over = bool((self.used[indexes] > self.allocatable[indexes]).any())
        if over:
            over_rows = self.used[indexes] > self.allocatable[indexes]
            i = int(indexes[int(np.argmax(over_rows.any(axis=1)))])
            column = int(np.argmax(self.used[i] > self.allocatable[i]))
            problems.append(
                f"{key}: node {self.names[i]} over capacity for {RESOURCES[column]}: "
                f"{self.used[i, column]} requested, {self.allocatable[i, column]} allocatable"
            )
        self.placed[key] = (indexes, amounts)
        self._best_tier.reserve(indexes, amounts)
        return problems

    def release(self, key: str) -> None:
        placed = self.placed.pop(key, None)
        if placed is not None:
            if len(placed[0]) == 1:
                self.used[placed[0][0]] -= placed[1]  # one row: no ufunc.at
            else:
                np.subtract.at(self.used, placed[0], placed[1])
            self._best_tier.release(*placed)

    def workloads_on(self, node: str) -> list[str]:
        i = self.index[node]
        return [key for key, (indexes, _) in self.placed.items() if i in indexes]

    def lowest_common_level(self, nodes: Sequence[str]) -> int:
        """Deepest level index whose one domain holds every node; -1 when they span the top."""
        indexes = [self.index[n] for n in nodes]
        first = indexes[0]
        if all(i == first for i in indexes):
            return len(self.levels) - 1  # one node is in one domain at every level
        columns = self.domains[:, indexes]
        shared = np.flatnonzero((columns == columns[:, :1]).all(axis=1))
        return int(shared[-1]) if len(shared) else -1

    def best_possible_level(self, pods: int, amounts: np.ndarray, node_selector: Mapping[str, str]) -> int:
        """t*: the deepest level with one domain able to host all ``pods`` (-1: none can).

        Slots per node are ``min_r ⌊free_r / request_r⌋`` over requested resources, on Ready
        nodes matching the admitted flavor's ``node_selector`` (its nodeLabels), counted before
        the gang itself is placed. ``BestTier`` answers through the topology placer's own
        ``CapacityState``, which patches its per-shape counts on the nodes each change touched.
        """
        return self._best_tier.best_level(pods, amounts, node_selector)


@dataclass
class _QuotaTree:
    nominal: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (cq, flavor, resource)
    borrowing_limit: dict[tuple[str, str, str], int] = field(default_factory=dict)
    cohort_of: dict[str, str] = field(default_factory=dict)  # cq or cohort -> parent cohort
    cohort_nominal: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (cohort, flavor, resource)


def _quota_tree(objects: Iterable[Resource]) -> _QuotaTree:
    tree = _QuotaTree()
    for obj in objects:
        if isinstance(obj, ClusterQueue):
            if obj.spec.cohort_name:
                tree.cohort_of[obj.name] = obj.spec.cohort_name
            groups = obj.spec.resource_groups
            target, limits = tree.nominal, tree.borrowing_limit
            name = obj.name
        elif isinstance(obj, Cohort):
            if obj.spec.parent_name:
                tree.cohort_of[obj.name] = obj.spec.parent_name
            groups = obj.spec.resource_groups
            target, limits = tree.cohort_nominal, {}
            name = obj.name
        else:
            continue
        for group in groups:
            for flavor in group.flavors:
                for quota in flavor.resources:
                    target[(name, flavor.name, quota.name)] = quota.nominal_quota.amount(quota.name)
                    if quota.borrowing_limit is not None:
                        limits[(name, flavor.name, quota.name)] = quota.borrowing_limit.amount(quota.name)
    return tree


class InvariantChecker:
    """Checks every admission and release; ``violations`` must stay empty."""

    def __init__(self, objects: Sequence[Resource], nodes: NodeLedger) -> None:
        self.nodes = nodes
        self.tree = _quota_tree(objects)
        self.tas_flavors = {o.name for o in objects if isinstance(o, ResourceFlavor) and o.spec.topology_name}
        self.usage: dict[tuple[str, str, str], int] = {}  # (cq or cohort, flavor, resource)
        self.charged: dict[str, tuple[str, dict[tuple[str, str], int]]] = {}
        self.violations: list[str] = []
        self.violation_count = 0
        self.checks = 0
        # subtree nominal per cohort, summed once
        self.subtree_nominal: dict[tuple[str, str, str], int] = dict(self.tree.cohort_nominal)
        for (cq, flavor, resource), amount in self.tree.nominal.items():
            for cohort in self._ancestors(cq):
                key = (cohort, flavor, resource)
                self.subtree_nominal[key] = self.subtree_nominal.get(key, 0) + amount
        for (cohort, flavor, resource), amount in self.tree.cohort_nominal.items():
            for parent in self._ancestors(cohort):
                key = (parent, flavor, resource)
                self.subtree_nominal[key] = self.subtree_nominal.get(key, 0) + amount
        self._limits_of: dict[tuple[str, str, str], tuple[tuple[tuple[str, str, str], int | None], ...]] = {}

    def _ancestors(self, name: str) -> list[str]:
        chain, seen = [], {name}
        while name in self.tree.cohort_of and self.tree.cohort_of[name] not in seen:
            name = self.tree.cohort_of[name]
            seen.add(name)
            chain.append(name)
        return chain

    def _fail(self, message: str) -> None:
        self.violation_count += 1
        if len(self.violations) < MAX_VIOLATIONS_KEPT:
            self.violations.append(message)

    def admitted(
        self,
        key: str,
        job: JobSpec,
        cluster_queue: str,
        usage: dict[tuple[str, str], int],
        flavors: dict[str, str],
        counts: dict[str, int],
        nodes: Sequence[str],
        now: float,
    ) -> None:
        self.checks += 1
        admitted_pods = sum(counts.values()) if counts else job.nodes
        if admitted_pods != job.nodes:
            self._fail(f"{_at(now)} {key}: gang admitted with {admitted_pods} of {job.nodes} pods")
        expected: dict[tuple[str, str], int] = {}
        for resource, amount in zip(RESOURCES[:3], pod_requests(job), strict=False):
            if amount and resource in flavors:
                expected[(flavors[resource], resource)] = amount * job.nodes
        charged = {fr: amount for fr, amount in usage.items() if amount}
        if charged != expected:
            self._fail(
                f"{_at(now)} {key}: charged {sorted(charged.items())}, requests × pods are {sorted(expected.items())}"
            )
        on_tas = any(flavor in self.tas_flavors for flavor in flavors.values())
        if on_tas:
            if len(nodes) != job.nodes:
                self._fail(f"{_at(now)} {key}: {len(nodes)} of {job.nodes} pods placed on the TAS flavor")
            for problem in self.nodes.place(key, nodes, pod_amounts(job)):
                self._fail(f"{_at(now)} {problem}")
        totals = self.usage
        for (flavor, resource), amount in charged.items():
            limits = self._limits(cluster_queue, flavor, resource)
            for holder_key, _ in limits:
                totals[holder_key] = totals.get(holder_key, 0) + amount
            for holder_key, limit in limits:
                if limit is not None and totals[holder_key] > limit:
                    self._quota_exceeded(now, key, holder_key, holder_key[0] != cluster_queue, limit)
        self.charged[key] = (cluster_queue, charged)

    def _limits(self, cq: str, flavor: str, resource: str) -> tuple[tuple[tuple[str, str, str], int | None], ...]:
        """``((holder, flavor, resource), limit)`` for the ClusterQueue, then each cohort above it.

        The ClusterQueue's limit is its nominal quota plus its borrowing limit in a cohort (None
        without one), its nominal quota outside one; a cohort's is its subtree's nominal quota.
        The quota tree is fixed, so each (queue, flavor, resource) is worked out once.
        """
        line = (cq, flavor, resource)
        limits = self._limits_of.get(line)
        if limits is None:
            nominal = self.tree.nominal.get(line, 0)
            borrowing = self.tree.borrowing_limit.get(line)
            if cq not in self.tree.cohort_of:
                ceiling: int | None = nominal
            else:
                ceiling = None if borrowing is None else nominal + borrowing
            cohorts = [(cohort, flavor, resource) for cohort in self._ancestors(cq)]
            limits = ((line, ceiling), *[(k, self.subtree_nominal.get(k, 0)) for k in cohorts])
            self._limits_of[line] = limits
        return limits

    def _quota_exceeded(self, now: float, key: str, holder_key: tuple[str, str, str], cohort: bool, limit: int) -> None:
        holder, flavor, resource = holder_key
        used = self.usage[holder_key]
        if cohort:
            self._fail(f"{_at(now)} {key}: cohort {holder} uses {used} {resource} of flavor {flavor}, has {limit}")
        else:
            self._fail(
                f"{_at(now)} {key}: ClusterQueue {holder} uses {used} {resource} of flavor {flavor}, limit {limit}"
            )

    def released(self, key: str) -> None:
        charged = self.charged.pop(key, None)
        if charged is None:
            return
        cluster_queue, usage = charged
        for (flavor, resource), amount in usage.items():
            for holder_key, _ in self._limits(cluster_queue, flavor, resource):
                self.usage[holder_key] -= amount
        self.nodes.release(key)

    def finish(self) -> None:
        """End of run: every ledger entry belongs to a gang still admitted, whole."""
        for key, (indexes, _) in self.nodes.placed.items():
            if key not in self.charged:
                self._fail(f"end: {key} holds {len(indexes)} pods on nodes but no quota")

    def summary(self) -> dict[str, object]:
        return {
            "checked_admissions": self.checks,
            "violations": self.violation_count,
            "examples": list(self.violations[:10]),
            "held": [
                "no node over capacity",
                "no quota exceeded",
                "every admitted gang complete or absent",
            ]
            if not self.violation_count
            else [],
        }
