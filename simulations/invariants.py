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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import ClusterQueue, Cohort, ResourceFlavor
from simulations.cluster import GPU_RESOURCE
from simulations.workloads import JobSpec

# Columns of the node ledger.
RESOURCES = ("cpu", "memory", GPU_RESOURCE, "pods")
CPU, MEMORY, GPU, PODS = range(4)
MAX_VIOLATIONS_KEPT = 100


def pod_amounts(job: JobSpec) -> np.ndarray:
    """Per-pod requests in the engine's integer units: cpu in millicores, memory in bytes."""
    return np.array([job.cpu_milli, job.memory_mib * 1024 * 1024, job.gpus_per_node, 1], dtype=np.int64)


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
        # per level: nodes ordered by domain (stable) and where each domain starts, for reduceat
        self._domain_order: list[np.ndarray | None] = []
        self._domain_starts: list[np.ndarray] = []
        for depth in range(len(self.levels)):
            order = np.argsort(self.domains[depth], kind="stable")
            ordered = self.domains[depth][order]
            starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if count else np.zeros(0, np.int64)
            identity = bool((order == np.arange(count)).all())
            self._domain_order.append(None if identity else order)
            self._domain_starts.append(starts)

    @property
    def gpu_capacity(self) -> int:
        return int(self.allocatable[:, GPU].sum())

    @property
    def gpus_used(self) -> int:
        return int(self.used[:, GPU].sum())

    def free(self) -> np.ndarray:
        return self.allocatable - self.used

    def place(self, key: str, nodes: Sequence[str], amounts: np.ndarray) -> list[str]:
        problems = []
        unknown = [n for n in nodes if n not in self.index]
        if unknown:
            return [f"{key}: placed on unknown node {unknown[0]}"]
        indexes = np.array([self.index[n] for n in nodes], dtype=np.int64)
        not_ready = [self.names[i] for i in indexes if not self.ready[i]]
        if not_ready:
            problems.append(f"{key}: pod placed on node {not_ready[0]}, which is not Ready")
        np.add.at(self.used, indexes, amounts)
        over = np.nonzero((self.used[indexes] > self.allocatable[indexes]).any(axis=1))[0]
        for position in over[:1]:
            i = int(indexes[position])
            column = int(np.argmax(self.used[i] > self.allocatable[i]))
            problems.append(
                f"{key}: node {self.names[i]} over capacity for {RESOURCES[column]}: "
                f"{self.used[i, column]} requested, {self.allocatable[i, column]} allocatable"
            )
        self.placed[key] = (indexes, amounts)
        return problems

    def release(self, key: str) -> None:
        placed = self.placed.pop(key, None)
        if placed is not None:
            np.subtract.at(self.used, placed[0], placed[1])

    def workloads_on(self, node: str) -> list[str]:
        i = self.index[node]
        return [key for key, (indexes, _) in self.placed.items() if i in indexes]

    def lowest_common_level(self, nodes: Sequence[str]) -> int:
        """Deepest level index whose one domain holds every node; -1 when they span the top."""
        indexes = np.array([self.index[n] for n in nodes], dtype=np.int64)
        for depth in range(len(self.levels) - 1, -1, -1):
            values = self.domains[depth, indexes]
            if (values == values[0]).all():
                return depth
        return -1

    def best_possible_level(self, pods: int, amounts: np.ndarray, eligible: np.ndarray) -> int:
        """t*: the deepest level with one domain able to host all ``pods`` (-1: none can).

        Slots per node are ``min_r ⌊free_r / request_r⌋`` over requested resources, on Ready
        nodes of the admitted flavor, counted before the gang itself is placed.
        """
        slots = np.full(len(self.names), np.iinfo(np.int64).max, dtype=np.int64)
        for column in range(len(RESOURCES)):
            if amounts[column] > 0:
                free = self.allocatable[:, column] - self.used[:, column]
                slots = np.minimum(slots, free // amounts[column])
        slots = np.where(eligible & self.ready, np.maximum(slots, 0), 0)
        if not len(slots):
            return -1
        for depth in range(len(self.levels) - 1, -1, -1):
            order = self._domain_order[depth]
            per_node = slots if order is None else slots[order]
            if int(np.add.reduceat(per_node, self._domain_starts[depth]).max()) >= pods:
                return depth
        return -1


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
        at = f"t={now:.3f}s"
        admitted_pods = sum(counts.values()) if counts else job.nodes
        if admitted_pods != job.nodes:
            self._fail(f"{at} {key}: gang admitted with {admitted_pods} of {job.nodes} pods")
        amounts = pod_amounts(job)
        expected: dict[tuple[str, str], int] = {}
        for column, resource in enumerate(RESOURCES[:3]):
            if amounts[column] and resource in flavors:
                expected[(flavors[resource], resource)] = int(amounts[column]) * job.nodes
        charged = {fr: amount for fr, amount in usage.items() if amount}
        if charged != expected:
            self._fail(f"{at} {key}: charged {sorted(charged.items())}, requests × pods are {sorted(expected.items())}")
        on_tas = any(flavor in self.tas_flavors for flavor in flavors.values())
        if on_tas:
            if len(nodes) != job.nodes:
                self._fail(f"{at} {key}: {len(nodes)} of {job.nodes} pods placed on the TAS flavor")
            for problem in self.nodes.place(key, nodes, amounts):
                self._fail(f"{at} {problem}")
        for (flavor, resource), amount in charged.items():
            for holder in (cluster_queue, *self._ancestors(cluster_queue)):
                k = (holder, flavor, resource)
                self.usage[k] = self.usage.get(k, 0) + amount
            self._check_quota(at, key, cluster_queue, flavor, resource)
        self.charged[key] = (cluster_queue, charged)

    def _check_quota(self, at: str, key: str, cq: str, flavor: str, resource: str) -> None:
        used = self.usage.get((cq, flavor, resource), 0)
        nominal = self.tree.nominal.get((cq, flavor, resource), 0)
        in_cohort = cq in self.tree.cohort_of
        limit = self.tree.borrowing_limit.get((cq, flavor, resource))
        ceiling = nominal + limit if (in_cohort and limit is not None) else (None if in_cohort else nominal)
        if ceiling is not None and used > ceiling:
            self._fail(f"{at} {key}: ClusterQueue {cq} uses {used} {resource} of flavor {flavor}, limit {ceiling}")
        for cohort in self._ancestors(cq):
            used = self.usage.get((cohort, flavor, resource), 0)
            capacity = self.subtree_nominal.get((cohort, flavor, resource), 0)
            if used > capacity:
                self._fail(f"{at} {key}: cohort {cohort} uses {used} {resource} of flavor {flavor}, has {capacity}")

    def released(self, key: str) -> None:
        charged = self.charged.pop(key, None)
        if charged is None:
            return
        cluster_queue, usage = charged
        for (flavor, resource), amount in usage.items():
            for holder in (cluster_queue, *self._ancestors(cluster_queue)):
                k = (holder, flavor, resource)
                self.usage[k] -= amount
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
