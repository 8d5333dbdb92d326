"""Saturation replay of the openb trace, as the FGD paper (ATC'23) reads it, under several placement policies.

Pods arrive in creation order and never leave. Each pod is placed by the policy on a node that
can hold it, or refused; the replay goes on through the whole trace after the first refusal
(later, smaller pods may still fit). What the paper plots, and what this reports per policy:

- the **GPU allocation ratio** (allocated GPUs / cluster GPUs) against the **arrived GPU
  demand** (GPUs requested so far, placed or not, / cluster GPUs), sampled along the trace;
- the allocation ratio and arrived demand **at the first refusal**;
- the **unallocated GPUs** at the end, and the **fragmentation**: the share of the free GPUs
  that sit on nodes where none of the refused GPU pods fits (free but stranded).

**Fractional GPUs**: a pod with ``gpu_milli`` < 1000 is **rounded up** to one whole GPU, as the
timeline replay and Kubernetes extended resources have it (the paper's GPU-sharing model is not
modelled); the count of such pods is reported.

Every policy sees the cluster as the paper does: one pool of all nodes (one ResourceFlavor
without node labels, a Topology with the hostname as its only level); a pod's ``gpu_spec``
(allowed GPU models) becomes a node selector on the model, tried model by model in the order
the trace lists them.
``trainyard`` is the engine's own placer (``scheduler.topology.TopologyPlacer``, the pod required
on one host); ``first-fit``, ``kueue-bestfit`` and ``random`` are the baselines of
``simulations.placement_policies`` over the same per-node slots.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scheduler.api.kueue import ResourceFlavor, Topology
from scheduler.topology import GangPlacement, GangRequest, PodSetRequest, TopologyPlacer
from scheduler.topology.graph import IntArray
from simulations.cluster import GPU_PRODUCT_LABEL, GPU_RESOURCE, HOSTNAME_LABEL, TOPOLOGY_NAME
from simulations.errors import SimulationInputError
from simulations.events import RandomStreams
from simulations.placement_policies import first_fit, kueue_best_fit, random_fit
from simulations.traces.openb import OpenbTrace, read_openb
from simulations.workloads import JobSpec

POLICIES = ("trainyard", "first-fit", "kueue-bestfit", "random")
CURVE_POINTS = 200
FRACTIONAL_GPUS = "rounded up: a pod with gpu_milli < 1000 takes one whole GPU (no GPU sharing)"

Chooser = Callable[[TopologyPlacer, PodSetRequest], IntArray | None]


def _requests(job: JobSpec) -> dict[str, int]:
    return {"cpu": job.cpu_milli, "memory": job.memory_mib * 1024 * 1024, GPU_RESOURCE: job.gpus_per_node}


def _slots(placer: TopologyPlacer, request: PodSetRequest) -> IntArray:
    state = placer.state
    return state.counts(state.shape(request.requests, node_selector=request.node_selector)).slots


def _trainyard(placer: TopologyPlacer, request: PodSetRequest) -> IntArray | None:
    placement = placer.place(GangRequest.of(request))
    if not isinstance(placement, GangPlacement):
        return None
    position = placer.index.position
    return np.array([position[name] for name in placement.pod_sets[0].nodes], dtype=np.int64)


def chooser(policy: str, seed: int) -> Chooser:
    """The node-choosing function of ``policy``; ``random`` draws from its own seeded stream."""
    if policy == "trainyard":
        return _trainyard
    if policy == "first-fit":
        return lambda placer, request: first_fit(_slots(placer, request), request.count)
    if policy == "kueue-bestfit":
        # the pod's required level is the host: Kueue's BestFit at the lowest level
        return lambda placer, request: kueue_best_fit(
            placer.index, _slots(placer, request), request.count, placer.index.depth - 1
        )
    if policy == "random":
        rng = RandomStreams(seed).numpy("saturation-random")
        return lambda placer, request: random_fit(_slots(placer, request), request.count, rng)
    raise SimulationInputError("--compare", None, "", f"unknown policy {policy!r}; use {', '.join(POLICIES)}")


@dataclass
class SaturationResult:
    policy: str
    capacity_gpus: int
    pods: int
    placed: int = 0
    refused: int = 0
    arrived_gpus: int = 0
    allocated_gpus: int = 0
    first_refusal: dict[str, Any] | None = None
    allocation_at_full_demand: float | None = None  # allocated share when arrived demand first reached 100 %
    fragmentation: dict[str, Any] = field(default_factory=dict)
    curve: list[tuple[float, float]] = field(default_factory=list)  # (arrived share, allocated share)
    refused_pods: list[dict[str, Any]] = field(default_factory=list)  # each refusal, with why

    def to_dict(self) -> dict[str, Any]:
        capacity = self.capacity_gpus or 1
        return {
            "policy": self.policy,
            "pods": self.pods,
            "placed": self.placed,
            "refused": self.refused,
            "capacity_gpus": self.capacity_gpus,
            "arrived_gpu_demand": self.arrived_gpus,
            "allocated_gpus": self.allocated_gpus,
            "allocation_ratio": round(self.allocated_gpus / capacity, 4),
            "unallocated_gpus": self.capacity_gpus - self.allocated_gpus,
            "first_refusal": self.first_refusal,
            "allocation_ratio_at_first_refusal": None
            if self.first_refusal is None
            else self.first_refusal["allocation_ratio"],
            "allocation_ratio_at_full_demand": self.allocation_at_full_demand,
            "fragmentation": self.fragmentation,
            "refusals": dict(Counter(pod["kind"] for pod in self.refused_pods).most_common()),
            "curve": [[round(a, 4), round(b, 4)] for a, b in self.curve],
            "refused_pods": self.refused_pods,
        }


class SaturationReplay:
    """One policy's replay: per-model placers, the pods in order, and the running figures."""

    def __init__(self, trace: OpenbTrace, policy: str, seed: int) -> None:
        topology = Topology.model_validate(
            {"metadata": {"name": TOPOLOGY_NAME}, "spec": {"levels": [{"nodeLabel": HOSTNAME_LABEL}]}}
        )
        pool = ResourceFlavor.model_validate({"metadata": {"name": "openb"}, "spec": {"topologyName": TOPOLOGY_NAME}})
        self.trace = trace
        self.placer = TopologyPlacer.build(topology, pool, trace.nodes)
        self.choose = chooser(policy, seed)
        self.result = SaturationResult(policy, trace.gpu_count, len(trace.jobs))
        self.refused_shapes: set[tuple[int, int, int, tuple[str, ...]]] = set()

    def place(self, job: JobSpec) -> bool:
        placer = self.placer
        selectors = [{GPU_PRODUCT_LABEL: model} for model in job.gpu_models] or [{}]
        for selector in selectors:
            request = PodSetRequest("pod", 1, _requests(job), node_selector=selector, required_level=HOSTNAME_LABEL)
            positions = self.choose(placer, request)
            if positions is None or len(positions) != 1:
                continue
            placer.reserve(GangPlacement(placer.flavor.name, (placer.describe_nodes(request, positions),)))
            return True
        return False

    def run(self) -> SaturationResult:
        result = self.result
        capacity = result.capacity_gpus or 1
        every = max(1, len(self.trace.jobs) // CURVE_POINTS)
        for i, job in enumerate(self.trace.jobs):
            result.arrived_gpus += job.gpus
            if self.place(job):
                result.placed += 1
                result.allocated_gpus += job.gpus
            else:
                result.refused += 1
                kind, reason = self.refusal(job)
                result.refused_pods.append(
                    {"pod": job.name, "index": i, "gpus": job.gpus, "kind": kind, "reason": reason}
                )
                if job.gpus:
                    self.refused_shapes.add((job.gpus_per_node, job.cpu_milli, job.memory_mib, job.gpu_models))
                if result.first_refusal is None:
                    result.first_refusal = {
                        "pod_index": i,
                        "pod": job.name,
                        "gpus": job.gpus,
                        "arrived_demand_ratio": round(result.arrived_gpus / capacity, 4),
                        "allocation_ratio": round(result.allocated_gpus / capacity, 4),
                    }
            if result.allocation_at_full_demand is None and result.arrived_gpus >= capacity:
                result.allocation_at_full_demand = round(result.allocated_gpus / capacity, 4)
            if i % every == 0 or i == len(self.trace.jobs) - 1:
                result.curve.append((result.arrived_gpus / capacity, result.allocated_gpus / capacity))
        result.fragmentation = self._fragmentation()
        return result

    def refusal(self, job: JobSpec) -> tuple[str, str]:
        """Why no node took ``job`` when it arrived: (kind, words). Kinds: ``never-fits`` (no
        allowed node holds it even empty), ``gpus`` (no allowed node has its GPUs free),
        ``cpu-memory`` (nodes with its GPUs free lack CPU or memory)."""
        state = self.placer.state
        rows = state.resource_index
        need = _requests(job)
        models = np.array([labels.get(GPU_PRODUCT_LABEL, "") for labels in state.labels])
        allowed = state.usable & (np.isin(models, job.gpu_models) if job.gpu_models else True)
        where = f"{'/'.join(job.gpu_models)} node" if job.gpu_models else "node"
        shape = f"{job.gpus} GPU(s), {job.cpu_milli / 1000:g} cores, {job.memory_mib / 1024:g} GiB"
        holds = allowed.copy()
        for resource, amount in need.items():
            holds &= state.alloc[rows[resource]] >= amount
        if not holds.any():
            return "never-fits", f"no {where} holds {shape} even empty"
        gpus_free = holds & (state.free[rows[GPU_RESOURCE]] >= job.gpus)
        if not gpus_free.any():
            most = int(state.free[rows[GPU_RESOURCE]][holds].max())
            return "gpus", f"no {where} has {job.gpus} GPU(s) free (the most on one that could hold it: {most})"
        return "cpu-memory", (
            f"{int(gpus_free.sum())} {where}(s) have {job.gpus} GPU(s) free, but none of them also has "
            f"{job.cpu_milli / 1000:g} cores and {job.memory_mib / 1024:g} GiB free"
        )

    def _fragmentation(self) -> dict[str, Any]:
        """Free GPUs on nodes where none of the refused GPU pods fits, against all free GPUs."""
        state = self.placer.state
        rows = state.resource_index
        free = np.maximum(state.free, 0)
        gpus = free[rows[GPU_RESOURCE]]
        node_models = np.array([labels.get(GPU_PRODUCT_LABEL, "") for labels in state.labels])
        usable = state.usable
        fits = np.zeros(len(gpus), dtype=bool)
        for per_pod, cpu, memory, models in self.refused_shapes:
            allowed = np.isin(node_models, models) if models else np.ones(len(gpus), dtype=bool)
            fits |= (
                (gpus >= per_pod)
                & (free[rows["cpu"]] >= cpu)
                & (free[rows["memory"]] >= memory * 1024 * 1024)
                & allowed
            )
        free_total = int(gpus[usable].sum())
        stranded = int(gpus[usable & ~fits].sum())
        return {
            "free_gpus": free_total,
            "stranded_gpus": stranded,
            "fraction_of_free": round(stranded / free_total, 4) if free_total else 0.0,
            "refused_gpu_pod_shapes": len(self.refused_shapes),
        }


def trace_summary(trace: OpenbTrace) -> dict[str, Any]:
    notes = trace.notes
    return {
        "pods": len(trace.jobs),
        "gpu_pods": sum(1 for job in trace.jobs if job.gpus),
        "fractional_gpu_pods": notes.get("fractional_gpu_pods", 0),
        "fractional_gpus": FRACTIONAL_GPUS,
        "nodes": len(trace.nodes),
        "gpus": trace.gpu_count,
        "gpu_models": {
            model: trace.capacity_by_model[model][GPU_RESOURCE] for model in sorted(trace.capacity_by_model)
        },
        "node_label_for_models": GPU_PRODUCT_LABEL,
    }


def run_saturation(directory: Path, policies: list[str], seed: int = 1) -> dict[str, Any]:
    """Every policy over the same trace, in the same pod order."""
    for policy in policies:
        if policy not in POLICIES:
            raise SimulationInputError(
                "--compare", None, "", f"unknown placement policy {policy!r}; use {', '.join(POLICIES)}"
            )
    trace = read_openb(directory)
    results = [SaturationReplay(trace, policy, seed).run().to_dict() for policy in policies]
    return {"mode": "saturation", "trace": str(directory), "seed": seed, **trace_summary(trace), "policies": results}
