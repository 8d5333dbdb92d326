"""Saturation replay of the openb trace, as the FGD paper (ATC'23) reads it, under several placement policies.

Pods arrive in creation order and never leave. Each pod is placed by the policy on a node that
can hold it, or refused; the replay goes on through the whole trace after the first refusal
(later, smaller pods may still fit). What the paper plots, and what this reports per policy:

- the **GPU allocation ratio** (allocated GPUs / cluster GPUs) against the **arrived GPU
  demand** (GPUs requested so far, placed or not, / cluster GPUs), sampled along the trace;
- the allocation ratio and arrived demand **at the first refusal**, and when demand reaches 100 %;
- the **unallocated GPUs** at the end, and the free GPUs **stranded** on nodes where none of the
  refused GPU pods fits;
- the **fragmentation rate** along the arrival of demand (the paper's Fig. 7b): the expected
  fragmented GPU capacity (``scheduler.topology.fragmentation``, measured against the whole
  trace's distribution of GPU pod shapes, as the paper measures it) over the unallocated GPU
  capacity.

**Two modes for fractional GPUs** (``gpu_milli`` < 1000): ``whole`` (the default, as Kubernetes
extended resources have it) rounds a share up to one whole GPU and places every pod through the
engine's own placer; ``sharing`` places shares as GPU sharing does, several pods on one GPU up
to 1000 thousandths (as the paper does), so its figures compare like for like with the paper's.
Demand and allocation count a share as its thousandths of a GPU there.

Every policy sees the cluster as the paper does: one pool of all nodes. ``trainyard`` is the
engine's placer (``scheduler.topology``; in sharing mode its one-node choice over the shared
GPUs, ``choose_least_fragmenting``), the others are ``simulations.placement_policies``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scheduler.topology.fragmentation import WHOLE, expected_fragmentation
from simulations.errors import SimulationInputError
from simulations.events import RandomStreams
from simulations.placement_policies import POLICIES, placement_policy
from simulations.saturation.clusters import SharedGpuCluster, WholeGpuCluster
from simulations.saturation.refusals import refusal, stranded
from simulations.saturation.shapes import PodShapes, TracePod
from simulations.traces.openb import OpenbTrace, read_openb

MODES = ("whole", "sharing")
CURVE_POINTS = 200
FRACTIONAL_GPUS = {
    "whole": "rounded up: a pod with gpu_milli < 1000 takes one whole GPU (no GPU sharing)",
    "sharing": "shared: a pod with gpu_milli < 1000 takes that share of one GPU, several pods to a GPU",
}

Cluster = WholeGpuCluster | SharedGpuCluster


def trace_pods(trace: OpenbTrace, mode: str) -> list[TracePod]:
    """The trace's pods in creation order, with their GPU share in ``mode``."""
    sharing = mode == "sharing"
    return [TracePod(job, trace.gpu_shares.get(job.name, WHOLE) if sharing else WHOLE) for job in trace.jobs]


@dataclass
class SaturationResult:
    policy: str
    capacity_milli: int
    pods: int
    placed: int = 0
    refused: int = 0
    arrived_milli: int = 0
    allocated_milli: int = 0
    first_refusal: dict[str, Any] | None = None
    allocation_at_full_demand: float | None = None  # allocated share when arrived demand first reached 100 %
    fragmentation: dict[str, Any] = field(default_factory=dict)
    curve: list[tuple[float, float]] = field(default_factory=list)  # (arrived share, allocated share)
    fragmentation_curve: list[tuple[float, float]] = field(default_factory=list)  # (arrived share, rate)
    refused_pods: list[dict[str, Any]] = field(default_factory=list)  # each refusal, with why

    def share(self, milli: int) -> float:
        return round(milli / (self.capacity_milli or 1), 4)

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "pods": self.pods,
            "placed": self.placed,
            "refused": self.refused,
            "capacity_gpus": self.capacity_milli // WHOLE,
            "arrived_gpu_demand": round(self.arrived_milli / WHOLE, 3),
            "allocated_gpus": round(self.allocated_milli / WHOLE, 3),
            "allocation_ratio": self.share(self.allocated_milli),
            "unallocated_gpus": round((self.capacity_milli - self.allocated_milli) / WHOLE, 3),
            "first_refusal": self.first_refusal,
            "allocation_ratio_at_first_refusal": None
            if self.first_refusal is None
            else self.first_refusal["allocation_ratio"],
            "allocated_gpus_at_first_refusal": None
            if self.first_refusal is None
            else self.first_refusal["allocated_gpus"],
            "allocation_ratio_at_full_demand": self.allocation_at_full_demand,
            "fragmentation": self.fragmentation,
            "refusals": dict(Counter(pod["kind"] for pod in self.refused_pods).most_common()),
            "curve": [[round(a, 4), round(b, 4)] for a, b in self.curve],
            "fragmentation_curve": [[round(a, 4), round(b, 4)] for a, b in self.fragmentation_curve],
            "refused_pods": self.refused_pods,
        }


class SaturationReplay:
    """One policy's replay: its cluster, the pods in order, and the running figures."""

    def __init__(self, trace: OpenbTrace, policy: str, seed: int, mode: str) -> None:
        rng = RandomStreams(seed).numpy("saturation-random")
        chosen = placement_policy(policy, rng)
        self.cluster: Cluster = SharedGpuCluster(trace, chosen) if mode == "sharing" else WholeGpuCluster(trace, chosen)
        self.pods = trace_pods(trace, mode)
        self.result = SaturationResult(policy, trace.gpu_count * WHOLE, len(self.pods))
        # the trace's GPU pod shapes, as the paper measures fragmentation
        self.target = PodShapes(self.cluster.state, self.cluster.gpu_row, self.pods)
        self.refused_shapes: set[tuple[int, int, int, int, tuple[str, ...]]] = set()

    def run(self) -> SaturationResult:
        result = self.result
        every = max(1, len(self.pods) // CURVE_POINTS)
        for i, pod in enumerate(self.pods):
            result.arrived_milli += pod.milli
            if isinstance(self.cluster, SharedGpuCluster):
                self.cluster.arrived.record(pod)
            if self.cluster.place(pod):
                result.placed += 1
                result.allocated_milli += pod.milli
            else:
                self._refused(i, pod)
            if result.allocation_at_full_demand is None and result.arrived_milli >= result.capacity_milli:
                result.allocation_at_full_demand = result.share(result.allocated_milli)
            if i % every == 0 or i == len(self.pods) - 1:
                arrived = result.arrived_milli / result.capacity_milli
                result.curve.append((arrived, result.allocated_milli / result.capacity_milli))
                result.fragmentation_curve.append((arrived, self.fragmentation_rate()))
        result.fragmentation = stranded(self.cluster, self.refused_shapes)
        return result

    def _refused(self, i: int, pod: TracePod) -> None:
        result = self.result
        result.refused += 1
        kind, reason = refusal(self.cluster, pod)
        result.refused_pods.append(
            {"pod": pod.job.name, "index": i, "gpus": round(pod.milli / WHOLE, 3), "kind": kind, "reason": reason}
        )
        if pod.gpus:
            job = pod.job
            self.refused_shapes.add((job.cpu_milli, job.memory_mib, pod.gpus, pod.share, job.gpu_models))
        if result.first_refusal is None:
            result.first_refusal = {
                "pod_index": i,
                "pod": job_name(pod),
                "gpus": round(pod.milli / WHOLE, 3),
                "arrived_demand_ratio": result.share(result.arrived_milli),
                "allocation_ratio": result.share(result.allocated_milli),
                "allocated_gpus": round(result.allocated_milli / WHOLE, 3),
            }

    def fragmentation_rate(self) -> float:
        """Expected fragmented GPU capacity over the idle GPU capacity of Ready nodes (0 when none is idle)."""
        cluster = self.cluster
        usable = np.flatnonzero(cluster.state.usable)
        idle = float(np.add.reduce(cluster.idle_milli()[usable]))
        if idle <= 0:
            return 0.0
        devices = cluster.devices()
        fragmented = expected_fragmentation(
            self.target.mix(),
            cluster.state.free[:, usable],
            self.target.eligible(usable),
            cluster.gpu_row,
            None if devices is None else devices[usable],
        )
        return float(np.add.reduce(fragmented)) / idle


def job_name(pod: TracePod) -> str:
    return pod.job.name


def trace_summary(trace: OpenbTrace, mode: str) -> dict[str, Any]:
    from simulations.cluster_spec import GPU_PRODUCT_LABEL, GPU_RESOURCE

    notes = trace.notes
    return {
        "pods": len(trace.jobs),
        "gpu_pods": sum(1 for job in trace.jobs if job.gpus),
        "fractional_gpu_pods": notes.get("fractional_gpu_pods", 0),
        "fractional_gpus": FRACTIONAL_GPUS[mode],
        "nodes": len(trace.nodes),
        "gpus": trace.gpu_count,
        "gpu_models": {
            model: trace.capacity_by_model[model][GPU_RESOURCE] for model in sorted(trace.capacity_by_model)
        },
        "node_label_for_models": GPU_PRODUCT_LABEL,
    }


def run_saturation(directory: Path, policies: list[str], seed: int = 1, mode: str = "whole") -> dict[str, Any]:
    """Every policy over the same trace, in the same pod order."""
    for policy in policies:
        if policy not in POLICIES:
            raise SimulationInputError(
                "--compare", None, "", f"unknown placement policy {policy!r}; use {', '.join(POLICIES)}"
            )
    if mode not in MODES:
        raise SimulationInputError("--gpu-sharing", None, "", f"unknown mode {mode!r}; use {', '.join(MODES)}")
    trace = read_openb(directory)
    results = [SaturationReplay(trace, policy, seed, mode).run().to_dict() for policy in policies]
    return {
        "mode": "saturation",
        "gpu_mode": mode,
        "trace": str(directory),
        "seed": seed,
        **trace_summary(trace, mode),
        "policies": results,
    }
