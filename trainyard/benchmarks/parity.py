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

``--objects PATH...`` gives `trainyard admit`'s inputs instead (``parity_inputs``); with
``--each`` every PATH is its own input, run in turn on one cluster (Kueue's objects cleared
between), and the JSON holds ``runs`` and the totals over them.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from scheduler.api.kueue import Workload
from trainyard.benchmarks.parity_inputs import ParityInput, each_objects_input, scenario_input
from trainyard.benchmarks.parity_recording import KueueRecording
from trainyard.benchmarks.parity_sides import Decision, EngineSide, KueueSide, SideRecord, clear_kueue_objects


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", default="kueue-baseline", help="a built-in scenario or a scenario file")
    parser.add_argument(
        "--objects",
        nargs="+",
        metavar="PATH",
        help="instead of a scenario: Kueue objects, Workloads and jobs as `trainyard admit` reads them",
    )
    parser.add_argument(
        "--each", action="store_true", help="with --objects: each PATH is an input of its own, run in turn"
    )
    parser.add_argument("--fair-sharing", action="store_true", help="with --objects: fair sharing on both sides")
    parser.add_argument(
        "--workloads", type=int, default=None, help="only the first N arrivals (default: every workload)"
    )
    parser.add_argument(
        "--step-seconds", type=float, default=0.5, help="seconds of the scenario's time per lockstep step"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--binaries", type=Path, metavar="DIR", help="where the component binaries are")
    parser.add_argument(
        "--record", type=Path, metavar="PATH", help="keep Kueue's side of the run in PATH (one input only)"
    )
    parser.add_argument(
        "--replay",
        type=Path,
        nargs="+",
        metavar="PATH",
        help="no cluster: compare the engine with Kueue's side as --record kept it (the same input); "
        "given several recordings, also Kueue's runs with each other",
    )


def _due(record: SideRecord, durations: dict[str, int], step: int) -> list[str]:
    return sorted(
        key for key, admitted in record.admitted_step.items() if key in durations and admitted + durations[key] <= step
    )


def parity_settings(fair_sharing: bool) -> Any:
    """The parity cluster: kube-apiserver, etcd and Kueue (with fair sharing where the input asks);
    no nodes, kubelet or kube-scheduler: Workloads are bare, and Kueue's TAS is not used."""
    from sandbox.real.control_plane import RealClusterSettings

    return RealClusterSettings(
        kueue=True, kwok=False, scheduler=False, jobset=False, controller_manager=False, kueue_fair_sharing=fair_sharing
    )


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    from sandbox.real.binaries import ClusterTools
    from sandbox.real.control_plane import RealCluster

    inputs = each_objects_input(args) if args.objects else [scenario_input(args)]
    if args.replay is not None:
        return replay_recordings(inputs[0], args.replay)
    if args.record is not None:  # one input: run() refuses --record with --each
        await asyncio.to_thread(args.record.parent.mkdir, parents=True, exist_ok=True)
    cluster = RealCluster(ClusterTools.locate(args.binaries), parity_settings(any(p.fair_sharing for p in inputs)))
    await asyncio.to_thread(cluster.start)
    try:
        runs = await run_inputs(cluster, inputs, args.record)
    finally:
        await asyncio.to_thread(cluster.stop)
    if len(runs) == 1:
        return runs[0]
    return {"runs": runs, **_totals(runs)}


async def run_inputs(cluster: Any, inputs: list[ParityInput], record_to: Path | None = None) -> list[dict[str, Any]]:
    """Each input in turn on one cluster, Kueue's objects cleared between them."""
    from sandbox.real.rest import RestError
    from scheduler.kube import KubeApiError

    runs = []
    for index, parity in enumerate(inputs):
        if index:
            await clear_kueue_objects(cluster.kubeconfig("admin"))
        try:
            runs.append({"input": parity.name, **await run_input(cluster, parity, record_to)})
        except (RestError, KubeApiError) as error:  # one input the cluster refuses: said, the rest still run
            runs.append({"input": parity.name, "workloads": 0, "error": str(error)})
        figures = {k: runs[-1].get(k) for k in ("workloads", "decisions_equal_pct", "order_equal_pct", "error")}
        print(f"bench parity: {parity.name}: {figures}", file=sys.stderr, flush=True)
    return runs


async def run_input(cluster: Any, parity: ParityInput, record_to: Path | None = None) -> dict[str, Any]:
    """One input on a cluster whose Kueue holds no objects: both sides, step by step, compared;
    Kueue's side kept in ``record_to`` where given."""
    from scheduler.kube import KubeClient, load_api_client

    for name, labels in parity.namespaces.items():
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        await asyncio.to_thread(cluster.admin.apply, namespace)
    objects = parity.documents()
    queues = [o for o in objects if o["kind"] in ("ClusterQueue", "LocalQueue")]
    for document in objects:
        if document not in queues:
            await asyncio.to_thread(cluster.admin.apply, document)
    priorities = _priorities(objects)
    api = await load_api_client(cluster.kubeconfig("admin"))
    kueue = KueueSide(KubeClient(api))
    engine = EngineSide(parity.objects, parity.fair_sharing, parity.namespaces)
    step_clock: list[float] = []
    watching = asyncio.create_task(kueue.watch())
    try:
        # the given admissions are written before their queues exist, so Kueue never sees them
        # pending (it would admit them itself first); a ClusterQueue takes its admitted Workloads in
        await kueue.seed([with_priority(w.to_dict(), priorities) for w in parity.seeded])
        engine.seed(parity.seeded)
        for document in queues:
            await asyncio.to_thread(cluster.admin.apply, document)
        # an input may hold a ClusterQueue inactive by design (a missing flavor): wait for the rest
        active = [o for o in objects if o["kind"] == "ClusterQueue" and engine.active(o["metadata"]["name"])]
        await until_active(kueue.client, active)
        for index, batch in enumerate(_steps(parity)):
            documents = _in_queue_order([with_priority(document, priorities) for document in batch])
            await kueue.run_step(index, _due(kueue.record, parity.durations, index), documents)
            step_clock.append(time.time())
            _engine_step(engine, parity, index, step_clock[-1], documents, kueue.created)
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
        await api.close()
    if record_to is not None:
        KueueRecording(parity.name, len(parity.keys), kueue.created, step_clock, kueue.record).save(record_to)
    return compare(parity.keys, kueue.record, engine.record)


def replay_input(parity: ParityInput, recording: KueueRecording) -> dict[str, Any]:
    """The engine's side of ``parity`` again, compared with Kueue's side as recorded: no cluster."""
    return compare(parity.keys, recording.record, replay_engine(parity, recording))


def replay_engine(parity: ParityInput, recording: KueueRecording) -> SideRecord:
    """The engine's decisions on ``parity`` with the creation times and step clock of ``recording``."""
    priorities = _priorities(parity.documents())
    engine = EngineSide(parity.objects, parity.fair_sharing, parity.namespaces)
    engine.seed(parity.seeded)
    for index, batch in enumerate(_steps(parity)):
        documents = _in_queue_order([with_priority(document, priorities) for document in batch])
        _engine_step(engine, parity, index, recording.step_clock[index], documents, recording.created)
    return engine.record


def replay_recordings(parity: ParityInput, paths: list[Path]) -> dict[str, Any]:
    """The engine against each recording of Kueue; with several, Kueue's first run against its
    others too: how far Kueue agrees with itself on the same input bounds what parity can read."""
    recordings = []
    for path in paths:
        recording = KueueRecording.load(path)
        recording.check_matches(parity.name, len(parity.keys), path)
        recordings.append(recording)
    if len(recordings) == 1:
        return {"replayed": str(paths[0]), **replay_input(parity, recordings[0])}
    engines = [replay_engine(parity, recording) for recording in recordings]
    runs = [
        {"replayed": str(path), **compare(parity.keys, r.record, engine)}
        for path, r, engine in zip(paths, recordings, engines, strict=True)
    ]
    kueue_runs = [
        {"first": str(paths[0]), "other": str(path), **compare(parity.keys, recordings[0].record, r.record)}
        for path, r in zip(paths[1:], recordings[1:], strict=True)
    ]
    summary = ("workloads", "decisions_equal_pct", "order_equal_pct", "differences_total")
    return {
        "workloads": len(parity.keys),
        "engine_against_kueue": [{k: run[k] for k in ("replayed", *summary)} for run in runs],
        "kueue_against_itself": [{k: run[k] for k in ("first", "other", *summary)} for run in kueue_runs],
        "where_kueue_agrees_with_itself": settled_agreement(parity.keys, [r.record for r in recordings], engines),
        "runs": runs,
    }


def settled_agreement(keys: list[str], kueue_runs: list[SideRecord], engines: list[SideRecord]) -> dict[str, Any]:
    """The engine held only to the decisions every one of Kueue's runs made alike.

    Where Kueue's own runs on one input differ, the decision hangs on the timing of its watch
    events and cycles, and no engine can match both; the decisions they all share are Kueue's
    semantics. ``engines[i]`` is the engine replayed on ``kueue_runs[i]``'s clock.
    """
    settled = [key for key in keys if len({_decision(run, key) for run in kueue_runs}) == 1]
    equal = [
        sum(_decision(engine, key) == _decision(run, key) for key in settled)
        for run, engine in zip(kueue_runs, engines, strict=True)
    ]
    return {
        "workloads": len(settled),
        "share_of_all_pct": round(100.0 * len(settled) / max(1, len(keys)), 2),
        "decisions_equal_pct": [round(100.0 * count / max(1, len(settled)), 2) for count in equal],
    }


def _decision(record: SideRecord, key: str) -> tuple[Any, ...]:
    outcome = _outcome(record.decisions.get(key, []))
    return (
        outcome["admitted"],
        outcome["cluster_queue"],
        tuple(sorted(outcome["flavors"].items())),
        outcome["preempted"],
    )


def _steps(parity: ParityInput) -> list[list[dict[str, Any]]]:
    tail: list[list[dict[str, Any]]] = [[]] * (3 if parity.durations else 1)  # finishes after the last arrival
    return parity.steps + tail


def _priorities(objects: list[dict[str, Any]]) -> dict[str, int]:
    return {o["metadata"]["name"]: int(o.get("value") or 0) for o in objects if o["kind"] == "WorkloadPriorityClass"}


def _engine_step(
    engine: EngineSide,
    parity: ParityInput,
    index: int,
    now: float,
    documents: list[dict[str, Any]],
    created: dict[str, str],
) -> None:
    """The engine's turn at step ``index``: the step's Workloads with the creation times the API server gave."""
    workloads = []
    for document in documents:
        key = f"{document['metadata']['namespace']}/{document['metadata']['name']}"
        document["metadata"]["creationTimestamp"] = created[key]
        workloads.append(Workload.model_validate(document))
    engine.run_step(index, now, _due(engine.record, parity.durations, index), workloads)


def _totals(runs: list[dict[str, Any]]) -> dict[str, Any]:
    workloads = sum(int(run["workloads"]) for run in runs)

    def pct(field: str) -> float:
        equal = sum(float(run.get(field, 0)) * int(run["workloads"]) / 100.0 for run in runs)
        return round(100.0 * equal / max(1, workloads), 2)

    return {
        "workloads": workloads,
        "decisions_equal_pct": pct("decisions_equal_pct"),
        "order_equal_pct": pct("order_equal_pct"),
    }


async def until_active(client: Any, cluster_queues: list[dict[str, Any]], timeout: float = 120.0) -> None:
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


def with_priority(document: dict[str, Any], priorities: dict[str, int]) -> dict[str, Any]:
    """The Workload with ``spec.priority`` from its WorkloadPriorityClass, as Kueue's job
    reconciler writes it (Kueue's CRD refuses a priorityClassRef without a priority)."""
    reference = document["spec"].get("priorityClassRef")
    if document["spec"].get("priority") is None:  # a given priority stands, as Kueue keeps it
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
        decided_alike = _decision(kueue, key) == _decision(engine, key)
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
    if (args.each or args.fair_sharing) and not args.objects:
        raise SystemExit("--each and --fair-sharing go with --objects (a scenario says its own fair sharing)")
    if (args.record or args.replay) and args.each:
        raise SystemExit("--record and --replay keep one input's run: leave out --each")
    if args.record and args.replay:
        raise SystemExit("--record runs the cluster, --replay does without it: give one of them")
    return asyncio.run(measure(args))
