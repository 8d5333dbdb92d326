"""What-if changes (``parse_change``): edits of a rehearsal's quotas, arrival rates, nodes or flavors."""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable, Sequence
from copy import deepcopy
from pathlib import Path
from typing import Any

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import (
    ClusterQueue,
    ResourceFlavor,
)
from simulations.errors import SimulationInputError
from simulations.events import RandomStreams
from simulations.whatif.rehearsal import Rehearsal, nominal_quota
from simulations.workloads import JobSpec

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
            nominal[obj.name] = nominal_quota(obj, rehearsal.built.primary_resource)
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
