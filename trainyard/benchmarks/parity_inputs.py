"""What `bench parity` gives both sides: a built-in scenario's arrivals, or `trainyard admit`'s inputs.

A ``ParityInput`` is the Kueue objects, the namespaces (with the labels ClusterQueues' namespace
selectors read), the Workloads given already admitted (they hold their quota from the start and
may be preempted), and the rest in lockstep steps. A scenario's jobs arrive at their submit
times and run their durations. `admit`'s inputs (``--objects``) are read by `admit`'s own loader,
TrainJobs and other jobs turned into Workloads as `admit` does; nothing finishes (`admit` is a
dry run), one Workload per step: those without a creationTimestamp first, in file order, then
by timestamp (priority first within one), as Kueue's queues take them; Finished ones are left out. Nodes and Topologies are left out: Kueue's
topology-aware scheduling needs nodes and is off on the parity cluster, so an input whose
flavors name a topology is refused (parity compares quota decisions).
"""

from __future__ import annotations

import argparse
import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scheduler.api.kueue import ResourceFlavor, Workload
from trainyard.benchmarks.parity_sides import bare_workload

LEFT_OUT_KINDS = ("Node", "Topology")
KUEUE_API = "kueue.x-k8s.io/v1beta2"


@dataclass
class ParityInput:
    name: str
    objects: list[Any]  # Kueue object models, applied to both sides
    fair_sharing: bool
    keys: list[str] = field(default_factory=list)  # every compared Workload, "namespace/name"
    steps: list[list[dict[str, Any]]] = field(default_factory=list)  # Workload documents per step
    seeded: list[Workload] = field(default_factory=list)  # given with status.admission
    durations: dict[str, int] = field(default_factory=dict)  # steps a workload runs; absent: never ends
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> labels

    def documents(self) -> list[dict[str, Any]]:
        return [served(obj.to_dict()) for obj in self.objects]


def served(document: dict[str, Any]) -> dict[str, Any]:
    """A Kueue object in the version Kueue serves: the loader reads v1beta1 into v1beta2's shape."""
    if document.get("apiVersion") == "kueue.x-k8s.io/v1beta1":
        document["apiVersion"] = KUEUE_API
    return document


def scenario_input(args: argparse.Namespace) -> ParityInput:
    from simulations.engine_driver import workload_document
    from simulations.events import RandomStreams
    from simulations.scenarios import build, resolve_scenario

    built = build(resolve_scenario(args.scenario))
    jobs = sorted(itertools.islice(built.jobs(RandomStreams(args.seed)), args.workloads), key=lambda j: j.submit_time)
    grouped: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for job in jobs:
        grouped[int(job.submit_time // args.step_seconds)].append(workload_document(job))
    last = max(grouped) if grouped else 0
    parity = ParityInput(str(args.scenario), list(built.objects), built.scenario.fair_sharing)
    parity.keys = [f"{j.team}/{j.name}" for j in jobs]
    parity.durations = {f"{j.team}/{j.name}": max(1, math.ceil(j.duration / args.step_seconds)) for j in jobs}
    parity.steps = [grouped.get(index, []) for index in range(last + 1)]
    parity.namespaces = _namespaces_of(parity.documents(), {})
    return parity


def objects_input(paths: list[str], fair_sharing: bool) -> ParityInput:
    """One `admit` input (files and directories read together), as `trainyard admit` reads it."""
    from trainyard.cli.admit.command import _load_inputs
    from trainyard.cli.errors import UserError

    try:
        loaded, _given, _sources = _load_inputs(argparse.Namespace(paths=paths, strict=False, runtime=[]))
    except UserError as error:
        raise SystemExit(f"bench parity: {error}") from None
    name = " ".join(paths)
    objects = [obj for obj in loaded.objects if type(obj).__name__ not in LEFT_OUT_KINDS]
    for obj in objects:
        if isinstance(obj, ResourceFlavor) and obj.spec.topology_name:
            raise SystemExit(
                f"bench parity: {name}: ResourceFlavor {obj.metadata.name!r} sets spec.topologyName: "
                "Kueue's topology-aware scheduling needs nodes, which the parity cluster does not run; "
                "give an input whose flavors name no topology"
            )
    parity = ParityInput(name, objects, fair_sharing)
    arrivals: list[tuple[str, int, int, dict[str, Any]]] = []
    for position, workload in enumerate(loaded.workloads):
        document = served(workload.to_dict())
        if _finished(document):
            continue  # holds nothing in Kueue nor in the engine: not given to either
        parity.keys.append(f"{document['metadata']['namespace']}/{document['metadata']['name']}")
        if (document.get("status") or {}).get("admission"):
            parity.seeded.append(Workload.model_validate(document))
        else:
            stamp = str(document["metadata"].get("creationTimestamp") or "")  # "" (none) sorts first
            arrivals.append((stamp, -int(document["spec"].get("priority") or 0), position, bare_workload(document)))
    # One arrival per step, in Kueue's queue order: Workloads created together would be decided by
    # where Kueue's cycles fall between the creations (across a cohort, a later non-borrowing one
    # goes first in a cycle), so neither side sees two arrivals at once.
    parity.steps = [[arrival[3]] for arrival in sorted(arrivals, key=lambda a: a[:3])]
    workloads = [w.to_dict() for w in loaded.workloads]
    parity.namespaces = _namespaces_of([*parity.documents(), *workloads], loaded.namespaces)
    return parity


def _finished(document: dict[str, Any]) -> bool:
    conditions = (document.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Finished" and c.get("status") == "True" for c in conditions)


def _namespaces_of(documents: list[dict[str, Any]], labelled: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    names = {str(d["metadata"]["namespace"]) for d in documents if d["metadata"].get("namespace")}
    return {name: dict(labelled.get(name, {})) for name in sorted(names | set(labelled))}


def each_objects_input(args: argparse.Namespace) -> list[ParityInput]:
    """``--objects``: one input of every path together, or (``--each``) one input per path."""
    paths = [str(Path(p)) for p in args.objects]
    groups = [[p] for p in paths] if args.each else [paths]
    return [objects_input(group, args.fair_sharing) for group in groups]
