"""`queues pending` on a cluster: the order and positions from the service's visibility API.

The running service answers Kueue's ``PendingWorkloadsSummary`` from its live engine; when the
cluster serves it, that answer decides which workloads are listed and where they stand, and the
local evaluation adds what the summary does not carry (requests, the reason in words). When the
cluster does not serve it, the local evaluation stands alone and the output says so.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from scheduler.engine import parse_timestamp
from scheduler.queues import PendingWorkload, QueueState
from trainyard.cli.queues.cluster_side import ask_visibility, note, visibility_path

ALL_PENDING = 100_000  # the summary's limit when every position is wanted


def _paths(state: QueueState, cluster_queue: str | None, namespace: str | None, local_queue: str | None) -> list[str]:
    engine = state.engine
    if cluster_queue is not None:
        return [visibility_path(cluster_queue, None, None)]
    if namespace is not None:
        names = [local_queue] if local_queue is not None else engine.local_queue_names(namespace)
        return [visibility_path(None, namespace, name) for name in names]
    return [visibility_path(name, None, None) for name in sorted(engine.cluster_queues())]


def _from_summary(
    item: dict[str, Any], local: dict[str, PendingWorkload], state: QueueState, cluster_queue: str | None
) -> PendingWorkload:
    metadata = item.get("metadata") or {}
    key = f"{metadata.get('namespace')}/{metadata.get('name')}"
    created = parse_timestamp(metadata.get("creationTimestamp"))
    known = local.get(key)
    engine_workload = state.engine.workload(key)
    base = known or PendingWorkload(
        namespace=str(metadata.get("namespace")),
        name=str(metadata.get("name")),
        local_queue=str(item.get("localQueueName", "")),
        cluster_queue=cluster_queue or (engine_workload.cluster_queue if engine_workload else None),
        position_in_cluster_queue=None,
        position_in_local_queue=None,
        priority=0,
        created=created or state.now,
        age_seconds=0.0,
        state="Pending",
        explain=lambda: ({}, "(not in the objects read: the service knows it, the local evaluation does not)"),
    )
    return dataclasses.replace(
        base,
        local_queue=str(item.get("localQueueName", base.local_queue)),
        position_in_cluster_queue=int(item.get("positionInClusterQueue", 0)),
        position_in_local_queue=int(item.get("positionInLocalQueue", 0)),
        priority=int(item.get("priority", base.priority)),
        age_seconds=max(0.0, state.now - created) if created is not None else base.age_seconds,
    )


def ordered_by_cluster(
    args: argparse.Namespace,
    state: QueueState,
    entries: list[PendingWorkload],
    cluster_queue: str | None,
    local_queue: str | None,
) -> tuple[list[PendingWorkload], str]:
    """The entries as the cluster's visibility API orders them, or the local ones and why."""
    paths = _paths(state, cluster_queue, args.namespace, local_queue)
    if not paths:
        return entries, "computed locally by the engine (no queue to ask the visibility API about)"
    answers = ask_visibility(args.kubeconfig, args.context, paths, ALL_PENDING)
    if isinstance(answers, str):
        note(f"the cluster does not serve the visibility API ({answers}); pending workloads computed locally")
        return entries, f"computed locally by the engine: the visibility API did not answer ({answers})"
    local = {entry.key: entry for entry in entries}
    found: list[PendingWorkload] = []
    for path in paths:
        asked_cq = path.split("/clusterqueues/", 1)[1].split("/", 1)[0] if "/clusterqueues/" in path else None
        for item in answers[path].get("items") or []:
            found.append(_from_summary(item, local, state, asked_cq))
    if cluster_queue is None and args.namespace is None:
        found.sort(key=lambda e: (e.cluster_queue or "", e.position_in_cluster_queue or 0))
    listed = {entry.key for entry in found}
    found.extend(e for e in entries if e.cluster_queue is None and e.key not in listed)
    return found, "the cluster's visibility API (visibility.kueue.x-k8s.io/v1beta1)"
