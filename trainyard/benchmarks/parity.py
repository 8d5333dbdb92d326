"""`trainyard bench parity --scenario NAME`: trainyard's engine held to real Kueue's decisions.

The scenario's Kueue objects (ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
WorkloadPriorityClasses) go to real Kueue v0.17 on a real cluster (``sandbox.real``, built by
``make cluster-tools``) and to trainyard's engine; then the same Workloads, in the scenario's
arrival order, are given to both in lockstep steps of ``--step-seconds`` of the scenario's time
(``parity_sides``): each step finishes what ran its duration, creates the step's arrivals, and
lets each side decide until it is quiet. Per workload the two are compared: admitted or not,
ClusterQueue, flavor per resource, preempted or not; and the step of each admission (the
order). JSON: ``workloads``, ``decisions_equal_pct``, ``order_equal_pct`` and every difference
with both sides' view (Kueue's condition message, the engine's reason in words).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from trainyard.benchmarks.parity_sides import Decision, EngineSide, KueueSide, SideRecord


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", default="kueue-baseline", help="a built-in scenario or a scenario file")
    parser.add_argument(
        "--workloads", type=int, default=None, help="only the first N arrivals (default: every workload)"
    )
    parser.add_argument(
        "--step-seconds", type=float, default=0.5, help="seconds of the scenario's time per lockstep step"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--binaries", type=Path, metavar="DIR", help="where the component binaries are")


def _steps(jobs: list[Any], step_seconds: float) -> list[list[Any]]:
    grouped: dict[int, list[Any]] = defaultdict(list)
    for job in jobs:
        grouped[int(job.submit_time // step_seconds)].append(job)
    last = max(grouped) if grouped else 0
    return [grouped.get(index, []) for index in range(last + 1)]


def _due(record: SideRecord, durations: dict[str, int], step: int) -> list[str]:
    return sorted(key for key, admitted in record.admitted_step.items() if admitted + durations[key] <= step)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    from sandbox.real.binaries import ClusterTools
    from sandbox.real.cluster import RealCluster, RealClusterSettings
    from scheduler.api.kueue import Workload
    from scheduler.kube import KubeClient, load_api_client
    from simulations.engine_driver import workload_document
    from simulations.events import RandomStreams
    from simulations.scenarios import build, resolve_scenario

    built = build(resolve_scenario(args.scenario))
    jobs = sorted(itertools.islice(built.jobs(RandomStreams(args.seed)), args.workloads), key=lambda j: j.submit_time)
    durations = {f"{j.team}/{j.name}": max(1, math.ceil(j.duration / args.step_seconds)) for j in jobs}
    steps = _steps(jobs, args.step_seconds)
    objects = [obj.to_dict() for obj in built.objects]
    priorities = {
        o["metadata"]["name"]: int(o.get("value") or 0) for o in objects if o["kind"] == "WorkloadPriorityClass"
    }
    namespaces = sorted({str(o["metadata"]["namespace"]) for o in objects if o["metadata"].get("namespace")})
    settings = RealClusterSettings(kueue=True, kwok=False, scheduler=False, jobset=False, controller_manager=False)
    cluster = RealCluster(ClusterTools.locate(args.binaries), settings)
    await asyncio.to_thread(cluster.start)
    try:
        for name in namespaces:
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            await asyncio.to_thread(cluster.admin.apply, namespace)
        for document in objects:
            await asyncio.to_thread(cluster.admin.apply, document)
        api = await load_api_client(cluster.kubeconfig("admin"))
        kueue = KueueSide(KubeClient(api))
        engine = EngineSide(list(built.objects), built.scenario.fair_sharing)
        watching = asyncio.create_task(kueue.watch())
        try:
            await _until_active(kueue.client, [o for o in objects if o["kind"] == "ClusterQueue"])
            for index, batch in enumerate(steps + [[]] * 3):
                documents = _in_queue_order([_with_priority(workload_document(job), priorities) for job in batch])
                await kueue.run_step(index, _due(kueue.record, durations, index), documents)
                workloads = []
                for document in documents:
                    key = f"{document['metadata']['namespace']}/{document['metadata']['name']}"
                    document["metadata"]["creationTimestamp"] = kueue.created[key]
                    workloads.append(Workload.model_validate(document))
                engine.run_step(index, time.time(), _due(engine.record, durations, index), workloads)
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
            await api.close()
    finally:
        await asyncio.to_thread(cluster.stop)
    return compare([f"{j.team}/{j.name}" for j in jobs], kueue.record, engine.record)


async def _until_active(client: Any, cluster_queues: list[dict[str, Any]], timeout: float = 120.0) -> None:
    """Until Kueue reports every ClusterQueue Active: before that its cache may lack a queue's
    quota or its cohort's, and it would hold back the first arrivals that the engine admits."""
    names = {str(cq["metadata"]["name"]) for cq in cluster_queues}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = await client.list("ClusterQueue")
        active = {
            str(cq["metadata"]["name"])
            for cq in listed.items
            if any(
                c.get("type") == "Active" and c.get("status") == "True"
                for c in cq.get("status", {}).get("conditions", [])
            )
        }
        if names <= active:
            await asyncio.sleep(1.0)  # and its scheduler has taken the last of them in
            return
        await asyncio.sleep(0.25)
    raise SystemExit(f"bench parity: Kueue did not make every ClusterQueue Active within {timeout:.0f} s")


def _in_queue_order(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A step's arrivals by priority, highest first (stable): the order Kueue's queues take
    Workloads created in one second. Kueue may run a cycle between two creations; created in
    this order, what it has seen at any moment is a prefix of what it would take at once, so
    its decisions do not hang on that timing, and the engine, given the step at once, agrees."""
    return sorted(documents, key=lambda document: -int(document["spec"].get("priority") or 0))


def _with_priority(document: dict[str, Any], priorities: dict[str, int]) -> dict[str, Any]:
    """The Workload with ``spec.priority`` from its WorkloadPriorityClass, as Kueue's job
    reconciler writes it (Kueue's CRD refuses a priorityClassRef without a priority)."""
    reference = document["spec"].get("priorityClassRef")
    document["spec"]["priority"] = priorities.get(reference["name"], 0) if reference else 0
    return document


def _outcome(decisions: list[Decision]) -> dict[str, Any]:
    admitted = [d for d in decisions if d.kind == "admitted"]
    first = admitted[0] if admitted else None
    return {
        "admitted": first is not None,
        "cluster_queue": first.cluster_queue if first else None,
        "flavors": dict(first.flavors) if first else {},
        "preempted": any(d.kind == "preempted" for d in decisions),
        "step": first.step if first else None,
    }


def compare(keys: list[str], kueue: SideRecord, engine: SideRecord) -> dict[str, Any]:
    differences = []
    same_decision = same_order = 0
    for key in keys:
        theirs = _outcome(kueue.decisions.get(key, []))
        ours = _outcome(engine.decisions.get(key, []))
        decided_alike = all(theirs[f] == ours[f] for f in ("admitted", "cluster_queue", "flavors", "preempted"))
        same_decision += decided_alike
        same_order += theirs["step"] == ours["step"]
        if not decided_alike or theirs["step"] != ours["step"]:
            theirs["waiting"] = kueue.waiting.get(key, "")
            ours["waiting"] = engine.waiting.get(key, "")
            differences.append({"workload": key, "kueue": theirs, "trainyard": ours})
    total = max(1, len(keys))
    return {
        "workloads": len(keys),
        "decisions_equal_pct": round(100.0 * same_decision / total, 2),
        "order_equal_pct": round(100.0 * same_order / total, 2),
        "admissions": {"kueue": len(kueue.admission_order), "trainyard": len(engine.admission_order)},
        "differences": differences[:100],
        "differences_total": len(differences),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.step_seconds <= 0:
        raise SystemExit("--step-seconds must be above 0")
    return asyncio.run(measure(args))
