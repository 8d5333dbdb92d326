"""What-if rehearsals: the current queues (or a scenario) simulated with and without a change.

``rehearsal_from_queues`` turns loaded Kueue objects and Workloads into a simulator scenario:
every ClusterQueue becomes a simulated team (its own namespace and LocalQueue, with the labels
of the namespace its workloads came from), the workloads that hold quota are submitted first,
then the pending ones in creation order, and the arrivals of the last ``window`` seconds are
replayed as the next window's arrivals. Durations are not in a Workload: each runs
``maximumExecutionTimeSeconds`` when set, else ``default_duration`` (less what an admitted one
already ran). Changes (``parse_change``) edit the objects, nodes or arrivals; ``run_variants``
runs the variants on one seed, in parallel processes, and ``compare`` lists per queue the
differences in wait p50/p95, completion time, utilization, borrowing and preemptions.
"""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing
import random
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import (
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    ClusterQueue,
    LocalQueue,
    ResourceFlavor,
    Topology,
    Workload,
    WorkloadPriorityClass,
)
from simulations.cluster import GPU_RESOURCE, LOCAL_QUEUE_NAME
from simulations.errors import SimulationInputError
from simulations.events import RandomStreams
from simulations.metrics import percentiles
from simulations.result import SimulationResult
from simulations.scenarios import BuiltScenario, Scenario
from simulations.simulator import Simulation
from simulations.workloads import JobSpec

if TYPE_CHECKING:
    from scheduler.queues import QueueState, StartEstimate

DEFAULT_WINDOW = 24 * 3600.0


@dataclass
class Rehearsal:
    """A built scenario plus the namespace labels its teams need (ClusterQueue selectors)."""

    built: BuiltScenario
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ from the queues


def _amount(resource: str, text: Any) -> int:
    from runtimes.k8s.quantity import Quantity

    return Quantity(str(text)).amount(resource) if not isinstance(text, Quantity) else text.amount(resource)


def _job(workload: Workload, team: str, submit: float, duration: float, name: str) -> JobSpec:
    pod_sets = workload.spec.pod_sets
    largest = max(pod_sets, key=lambda p: p.count) if pod_sets else None
    per_pod: dict[str, int] = {}
    annotations: dict[str, str] = {}
    if largest is not None:
        from runtimes.k8s.core import pod_requests

        per_pod = {r: q.amount(r) for r, q in pod_requests(largest.template.spec).items()}
        annotations = largest.template.metadata.annotations
    mode, level = None, None
    if PODSET_REQUIRED_TOPOLOGY in annotations:
        mode, level = "required", annotations[PODSET_REQUIRED_TOPOLOGY]
    elif PODSET_PREFERRED_TOPOLOGY in annotations:
        mode, level = "preferred", annotations[PODSET_PREFERRED_TOPOLOGY]
    return JobSpec(
        name=name,
        team=team,
        submit_time=submit,
        nodes=max(1, sum(p.count for p in pod_sets)),
        gpus_per_node=per_pod.get(GPU_RESOURCE, 0),
        duration=max(1.0, duration),
        priority_class=workload.priority_class_name,
        cpu_milli=per_pod.get("cpu", 0),
        memory_mib=per_pod.get("memory", 0) // (1 << 20),
        topology_mode=mode,
        topology_level=level,
    )


def rehearsal_from_queues(
    objects: Sequence[Resource],
    workloads: Sequence[Workload],
    namespaces: dict[str, dict[str, str]],
    *,
    now: float,
    default_duration: float = 3600.0,
    window: float = DEFAULT_WINDOW,
    name: str = "current-queues",
) -> Rehearsal:
    from scheduler.engine.engine import parse_timestamp

    local_queues = {f"{o.metadata.namespace or 'default'}/{o.name}": o for o in objects if isinstance(o, LocalQueue)}
    cluster_queues = {o.name: o for o in objects if isinstance(o, ClusterQueue)}
    nodes = [o for o in objects if isinstance(o, Node)]
    kept: list[Resource] = [o for o in objects if not isinstance(o, LocalQueue | Node)]
    notes: list[str] = []
    jobs: list[tuple[int, float, JobSpec]] = []
    team_labels: dict[str, dict[str, str]] = {}
    priorities = {o.name: o.value for o in objects if isinstance(o, WorkloadPriorityClass)}
    for workload in workloads:
        if workload.status.is_true("Finished") or not workload.spec.active:
            continue
        namespace = workload.metadata.namespace or "default"
        lq = local_queues.get(f"{namespace}/{workload.spec.queue_name or ''}")
        if lq is None or lq.spec.cluster_queue not in cluster_queues:
            notes.append(f"{namespace}/{workload.name}: no LocalQueue/ClusterQueue, left out")
            continue
        team = lq.spec.cluster_queue
        team_labels.setdefault(team, dict(namespaces.get(namespace, {})))
        duration = float(workload.spec.maximum_execution_time_seconds or default_duration)
        created = parse_timestamp(workload.metadata.creation_timestamp) or now
        job_name = f"{namespace}.{workload.name}"
        admitted = workload.status.admission is not None
        if admitted:
            reserved = workload.status.condition("QuotaReserved")
            started = parse_timestamp(reserved.last_transition_time if reserved else None) or now
            duration -= max(0.0, now - started)
        # pending ones in Kueue's queue order (priority, then creation): the simulator runs a
        # cycle after each arrival, so the order they arrive in is the order they are tried
        order = (
            created
            if admitted
            else created - 1e12 * priorities.get(workload.priority_class_name or "", workload.spec.priority or 0)
        )
        jobs.append((0 if admitted else 1, order, _job(workload, team, 0.0, duration, job_name)))
        if window > 0 and now - window < created <= now:
            replay = created - now + window
            jobs.append((2, replay, _job(workload, team, replay, default_duration, f"{job_name}.next")))
    jobs.sort(key=lambda entry: (entry[0] == 2, entry[1] if entry[0] == 2 else 0.0, entry[0], entry[1]))
    ordered = [job for _, _, job in jobs]
    for team in sorted(team_labels):
        kept.append(
            LocalQueue.model_validate(
                {"metadata": {"name": LOCAL_QUEUE_NAME, "namespace": team}, "spec": {"clusterQueue": team}}
            )
        )
    primary = GPU_RESOURCE if any(job.gpus_per_node for job in ordered) else "cpu"
    nominal = {name: _nominal(cq, primary) for name, cq in cluster_queues.items()}
    capacity = sum(_amount(primary, n.status.allocatable.get(primary, 0)) for n in nodes) if nodes else 0
    if primary == "cpu":
        capacity //= 1000
    capacity = capacity or sum(nominal.values()) or 1
    topology = next((o for o in objects if isinstance(o, Topology)), None)
    levels = tuple(topology.level_labels) if topology is not None else ()
    built = BuiltScenario(
        Scenario(name=name, sample_seconds=300.0),
        kept,
        nodes,
        [n.to_dict() for n in nodes],
        levels,
        len(ordered),
        lambda _: iter(ordered),
        primary,
        capacity,
        nominal,
    )
    return Rehearsal(built, dict(team_labels), notes)


def _nominal(cq: ClusterQueue, resource: str) -> int:
    total = 0
    for group in cq.spec.resource_groups:
        for flavor in group.flavors:
            for quota in flavor.resources:
                if quota.name == resource:
                    amount = quota.nominal_quota.amount(resource)
                    total += amount // 1000 if resource == "cpu" else amount
    return total


def rehearsal_from_state(state: QueueState, **options: Any) -> Rehearsal:
    return rehearsal_from_queues(state.objects, state.workloads, state.namespaces, now=state.now, **options)


# ------------------------------------------------------------------------------ changes

Change = Callable[[Rehearsal, int], Rehearsal]


def _with_jobs(rehearsal: Rehearsal, seed: int, edit: Callable[[list[JobSpec]], list[JobSpec]]) -> Rehearsal:
    jobs = edit(list(rehearsal.built.jobs(RandomStreams(seed))))
    built = dataclasses.replace(rehearsal.built, jobs=lambda _: iter(jobs), job_count=len(jobs))
    return dataclasses.replace(rehearsal, built=built)


def _replace_objects(rehearsal: Rehearsal, replaced: list[Resource], removed: set[tuple[str, str]]) -> Rehearsal:
    by_key = {(o.kind, o.name): o for o in replaced}
    objects = [by_key.pop((o.kind, o.name), o) for o in rehearsal.built.objects if (o.kind, o.name) not in removed]
    objects.extend(by_key.values())
    nominal = dict(rehearsal.built.nominal)
    for obj in replaced:
        if isinstance(obj, ClusterQueue):
            nominal[obj.name] = _nominal(obj, rehearsal.built.primary_resource)
    return dataclasses.replace(rehearsal, built=dataclasses.replace(rehearsal.built, objects=objects, nominal=nominal))


def _flavor(rehearsal: Rehearsal, name: str) -> ResourceFlavor:
    for obj in rehearsal.built.objects:
        if isinstance(obj, ResourceFlavor) and obj.name == name:
            return obj
    raise SimulationInputError("what-if", None, "flavor", f"no ResourceFlavor {name!r} in the queues")


def _with_nodes(rehearsal: Rehearsal, documents: list[dict[str, Any]]) -> Rehearsal:
    nodes = [Node.model_validate(d) for d in documents]
    built = dataclasses.replace(rehearsal.built, nodes=nodes, node_documents=documents)
    return dataclasses.replace(rehearsal, built=built)


def _pool(rehearsal: Rehearsal, flavor: ResourceFlavor) -> list[int]:
    wanted = flavor.spec.node_labels
    return [
        i
        for i, d in enumerate(rehearsal.built.node_documents)
        if all(((d.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in wanted.items())
    ]


def parse_change(text: str) -> Change:
    """One change, spelled:

    - ``quota:CQ:FLAVOR:RESOURCE=NOMINAL[:borrowing=Q][:lending=Q]``
    - ``rate:CQ=FACTOR`` (that queue's arrivals scaled; 2 doubles them, 0.5 halves them)
    - ``add-nodes:FLAVOR=N`` / ``remove-nodes:FLAVOR=N`` (the flavor's node pool grows or shrinks)
    - ``remove-flavor:FLAVOR`` (the ResourceFlavor and its nodes go; its ClusterQueues turn inactive)
    - ``apply:FILE`` (Kueue objects or Nodes from a YAML file replace or join the queues' objects)
    """
    kind, _, rest = text.partition(":")
    try:
        if kind == "quota":
            return _quota_change(rest)
        if kind == "rate":
            queue, _, factor = rest.partition("=")
            return _rate_change(queue, float(factor))
        if kind in ("add-nodes", "remove-nodes"):
            flavor, _, count = rest.partition("=")
            return _node_change(flavor, int(count) * (1 if kind == "add-nodes" else -1))
        if kind == "remove-flavor" and rest:
            return _remove_flavor(rest)
        if kind == "apply" and rest:
            return _apply_file(Path(rest))
    except ValueError as error:
        raise SimulationInputError("what-if", None, text, f"cannot read the change: {error}") from None
    raise SimulationInputError(
        "what-if",
        None,
        text,
        "unknown change; use quota:CQ:FLAVOR:RESOURCE=Q[:borrowing=Q][:lending=Q], rate:CQ=FACTOR, "
        "add-nodes:FLAVOR=N, remove-nodes:FLAVOR=N, remove-flavor:FLAVOR or apply:FILE",
    )


def _quota_change(rest: str) -> Change:
    from scheduler.queues import QuotaChange, changed_cluster_queue

    parts = rest.split(":")
    if len(parts) < 3 or "=" not in parts[2]:
        raise ValueError("expected quota:CQ:FLAVOR:RESOURCE=NOMINAL")
    resource, _, nominal = parts[2].partition("=")
    extra = dict(p.split("=", 1) for p in parts[3:])
    change = QuotaChange(parts[0], parts[1], resource, nominal, extra.get("borrowing"), extra.get("lending"))

    def apply(rehearsal: Rehearsal, seed: int) -> Rehearsal:
        cq = next(
            (o for o in rehearsal.built.objects if isinstance(o, ClusterQueue) and o.name == change.cluster_queue), None
        )
        if cq is None:
            raise SimulationInputError("what-if", None, "quota", f"no ClusterQueue {change.cluster_queue!r}")
        return _replace_objects(rehearsal, [changed_cluster_queue(cq, change)], set())

    return apply


def _rate_change(queue: str, factor: float) -> Change:
    if factor < 0:
        raise ValueError("a rate factor is 0 or more")

    def apply(rehearsal: Rehearsal, seed: int) -> Rehearsal:
        rng = random.Random(seed)

        def edit(jobs: list[JobSpec]) -> list[JobSpec]:
            # Only arrivals scale (jobs already there at time 0 stay): each is kept floor(f)
            # times plus once more with probability frac(f), copies spread to its next arrival.
            arrivals = [j for j in jobs if j.team == queue and j.submit_time > 0]
            gaps = {id(a): (b.submit_time - a.submit_time) for a, b in itertools.pairwise(arrivals)}
            scaled: list[JobSpec] = []
            for job in jobs:
                if job.team != queue or job.submit_time <= 0:
                    scaled.append(job)
                    continue
                copies = int(factor) + (1 if rng.random() < factor - int(factor) else 0)
                gap = gaps.get(id(job), 0.0)
                for i in range(copies):
                    offset = gap * i / copies
                    scaled.append(
                        dataclasses.replace(
                            job, name=job.name + (f".x{i}" if i else ""), submit_time=job.submit_time + offset
                        )
                    )
            scaled.sort(key=lambda j: j.submit_time)
            return scaled

        return _with_jobs(rehearsal, seed, edit)

    return apply


def _node_change(flavor_name: str, delta: int) -> Change:
    def apply(rehearsal: Rehearsal, seed: int) -> Rehearsal:
        pool = _pool(rehearsal, _flavor(rehearsal, flavor_name))
        documents = list(rehearsal.built.node_documents)
        if delta < 0:
            gone = set(pool[delta:]) if -delta <= len(pool) else set(pool)
            documents = [d for i, d in enumerate(documents) if i not in gone]
        else:
            if not pool:
                raise SimulationInputError("what-if", None, "add-nodes", f"flavor {flavor_name!r} has no node to copy")
            template = documents[pool[0]]
            for i in range(delta):
                copy: dict[str, Any] = deepcopy(template)
                name = f"{template['metadata']['name']}-whatif-{i}"
                copy["metadata"] = {**copy["metadata"], "name": name}
                labels = dict(copy["metadata"].get("labels") or {})
                if "kubernetes.io/hostname" in labels:
                    labels["kubernetes.io/hostname"] = name
                copy["metadata"]["labels"] = labels
                documents.append(copy)
        return _with_nodes(rehearsal, documents)

    return apply


def _remove_flavor(name: str) -> Change:
    def apply(rehearsal: Rehearsal, seed: int) -> Rehearsal:
        pool = set(_pool(rehearsal, _flavor(rehearsal, name)))
        documents = [d for i, d in enumerate(rehearsal.built.node_documents) if i not in pool]
        return _with_nodes(_replace_objects(rehearsal, [], {("ResourceFlavor", name)}), documents)

    return apply


def _apply_file(path: Path) -> Change:
    def apply(rehearsal: Rehearsal, seed: int) -> Rehearsal:
        from scheduler.api.loading import load_kueue_objects

        loaded = load_kueue_objects([path])
        queue_objects = [o for o in loaded.objects if not isinstance(o, Node)]
        new_nodes = [o.to_dict() for o in loaded.objects if isinstance(o, Node)]
        changed = _replace_objects(rehearsal, queue_objects, set())
        if new_nodes:
            names = {d["metadata"]["name"] for d in new_nodes}
            kept = [d for d in changed.built.node_documents if d["metadata"]["name"] not in names]
            changed = _with_nodes(changed, kept + new_nodes)
        return changed

    return apply


def apply_changes(rehearsal: Rehearsal, changes: Sequence[Change], seed: int) -> Rehearsal:
    for change in changes:
        rehearsal = change(rehearsal, seed)
    return rehearsal


# ------------------------------------------------------------------------------ running


@dataclass
class VariantResult:
    name: str
    result: SimulationResult
    per_queue: dict[str, dict[str, Any]]


_PENDING_RUNS: list[tuple[str, Rehearsal, int, float | None]] = []  # read by forked workers


def per_queue_figures(simulation: Simulation) -> dict[str, dict[str, Any]]:
    """Wait p50/p95, completion p50, utilization of nominal, mean borrowing and preemptions per queue."""
    metrics = simulation.metrics
    summary = metrics.summary()
    mean_use = summary["allocation"]["mean"]
    figures: dict[str, dict[str, Any]] = {}
    queues = sorted({r.cluster_queue for r in metrics.jobs.values()} | set(simulation.built.nominal))
    for queue in queues:
        records = [r for r in metrics.jobs.values() if r.cluster_queue == queue]
        waits = percentiles([r.admitted - r.submitted for r in records if r.admitted is not None])
        completion = percentiles([r.finished - r.submitted for r in records if r.finished is not None])
        share = summary["fair_share"].get(queue, {}).get("share_of_use", 0.0)
        nominal = simulation.built.nominal.get(queue, 0)
        figures[queue] = {
            "jobs": len(records),
            "wait_p50_s": waits["p50"],
            "wait_p95_s": waits["p95"],
            "completion_p50_s": completion["p50"],
            "utilization": round(share * mean_use / nominal, 4) if nominal else None,
            "borrowing_mean": summary["borrowing_mean"].get(queue, 0.0),
            "preemptions": sum(r.preemptions for r in records),
            "unfinished": sum(1 for r in records if r.finished is None),
        }
    return figures


def run_one(name: str, rehearsal: Rehearsal, seed: int, horizon: float | None = None) -> VariantResult:
    simulation = Simulation(rehearsal.built, seed, horizon=horizon)
    for namespace, labels in rehearsal.namespaces.items():
        simulation.driver.engine.set_namespace(namespace, labels)
    result = simulation.run()
    return VariantResult(name, result, per_queue_figures(simulation))


def _run_pending(index: int) -> VariantResult:
    name, rehearsal, seed, horizon = _PENDING_RUNS[index]
    return run_one(name, rehearsal, seed, horizon)


def run_variants(
    variants: dict[str, Rehearsal], seed: int, *, processes: int | None = None, horizon: float | None = None
) -> dict[str, VariantResult]:
    """Every variant on the same seed; in forked processes (one per core) when there are several."""
    names = list(variants)
    workers = min(len(names), processes or multiprocessing.cpu_count())
    if workers <= 1:
        return {n: run_one(n, variants[n], seed, horizon) for n in names}
    _PENDING_RUNS[:] = [(n, variants[n], seed, horizon) for n in names]
    try:
        # fork: the workers inherit the built scenarios (their job streams are closures)
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(_run_pending, range(len(names))))
    finally:
        _PENDING_RUNS.clear()
    return {r.name: r for r in results}


FIGURES = ("jobs", "wait_p50_s", "wait_p95_s", "completion_p50_s", "utilization", "borrowing_mean", "preemptions")


def compare(base: VariantResult, other: VariantResult) -> dict[str, dict[str, dict[str, Any]]]:
    """queue -> figure -> {"base", "variant", "change"} (change = variant − base where both exist)."""
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for queue in sorted(set(base.per_queue) | set(other.per_queue)):
        before, after = base.per_queue.get(queue, {}), other.per_queue.get(queue, {})
        row = {}
        for figure in FIGURES:
            b, a = before.get(figure), after.get(figure)
            change = round(a - b, 4) if isinstance(a, int | float) and isinstance(b, int | float) else None
            row[figure] = {"base": b, "variant": a, "change": change}
        rows[queue] = row
    return rows


# ------------------------------------------------------------------------------ start estimate


def estimate_start(state: QueueState, key: str, *, default_duration: float = 3600.0) -> StartEstimate:
    """When ``key`` could start if nothing new arrives: the current queues simulated to the end."""
    from scheduler.queues import StartEstimate

    rehearsal = rehearsal_from_state(state, default_duration=default_duration, window=0.0)
    workload = state.engine.workloads.get(key)
    assumption = (
        f"every workload runs maximumExecutionTimeSeconds or {default_duration:g}s, no new arrivals, "
        "admitted workloads keep running"
    )
    if workload is None or workload.cluster_queue is None:
        return StartEstimate(None, assumption + "; the workload waits outside any ClusterQueue")
    simulation = Simulation(rehearsal.built, 1)
    for namespace, labels in rehearsal.namespaces.items():
        simulation.driver.engine.set_namespace(namespace, labels)
    simulation.run()
    record = simulation.metrics.jobs.get(f"{workload.cluster_queue}/{workload.namespace}.{workload.name}")
    if record is None or record.admitted is None:
        return StartEstimate(None, assumption)
    return StartEstimate(record.admitted, assumption)
