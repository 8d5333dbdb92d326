"""How `trainyard cluster-demo` prints what it read from the API server (rich tables and lines).

Every function takes documents as the server returned them; none of them knows the tour's plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.table import Table

from runtimes.k8s.quantity import format_amount, parse_quantity, to_amount
from trainyard.cli.cluster_demo.seed import BLOCK_LABEL, GPU
from trainyard.cli.cluster_demo.watch import owner_name
from trainyard.cli.progress import condition, condition_is_true, nodes_in_words, placement, workload_phase


def new_table(title: str, columns: Sequence[str]) -> Table:
    """A table whose cells fold rather than cut: names must stay whole on a narrow terminal."""
    found = Table(title=title, title_justify="left")
    for column in columns:
        found.add_column(column, overflow="fold")
    return found


def quantity(value: Any, resource: str = GPU) -> str:
    return format_amount(resource, to_amount(resource, parse_quantity(value)))


def nodes_table(nodes: Iterable[Mapping[str, Any]]) -> Table:
    table = new_table("Nodes", ("NAME", "BLOCK", "GPUS", "READY"))
    for node in nodes:
        labels = node["metadata"].get("labels") or {}
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        ready = condition(node, "Ready")
        table.add_row(
            node["metadata"]["name"],
            labels.get(BLOCK_LABEL, "-"),
            str(allocatable.get(GPU, "0")),
            str((ready or {}).get("status", "Unknown")),
        )
    return table


def nominal_gpus(cluster_queue: Mapping[str, Any]) -> str:
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for resource in flavor.get("resources") or []:
                if resource.get("name") == GPU:
                    return f"{quantity(resource.get('nominalQuota', 0))} ({flavor.get('name')})"
    return "0"


def queues_table(cluster_queues: Iterable[Mapping[str, Any]]) -> Table:
    table = new_table("ClusterQueues", ("NAME", "COHORT", "NOMINAL GPUS", "PREEMPTION"))
    for queue in cluster_queues:
        spec = queue.get("spec") or {}
        preemption = spec.get("preemption") or {}
        table.add_row(
            queue["metadata"]["name"],
            str(spec.get("cohortName") or spec.get("cohort") or "-"),
            nominal_gpus(queue),
            ", ".join(f"{k}={v}" for k, v in sorted(preemption.items())) or "-",
        )
    return table


def admitted_line(workload: Mapping[str, Any]) -> str:
    admission = (workload.get("status") or {}).get("admission") or {}
    flavor, nodes = placement(workload)
    return (
        f"[green]admitted[/] Workload [bold]{workload['metadata']['name']}[/] "
        f"(TrainJob {owner_name(workload)}) in ClusterQueue {admission.get('clusterQueue', '?')}: "
        f"flavor {flavor}, topologyAssignment → {nodes_in_words(nodes) if nodes else 'none'}"
    )


def condition_line(document: Mapping[str, Any], kind: str) -> str:
    found = condition(document, kind) or {}
    return f"{kind}={found.get('status', '?')} reason={found.get('reason', '?')}: {found.get('message', '')}"


def gpus_held(workload: Mapping[str, Any]) -> int:
    """GPUs the Workload holds: its admission's resourceUsage while quota is reserved and it has not finished."""
    if not condition_is_true(workload, "QuotaReserved") or condition_is_true(workload, "Finished"):
        return 0
    admission = (workload.get("status") or {}).get("admission") or {}
    return sum(
        to_amount(GPU, parse_quantity((assignment.get("resourceUsage") or {}).get(GPU, 0)))
        for assignment in admission.get("podSetAssignments") or []
    )


def usage_table(
    cluster_queues: Iterable[Mapping[str, Any]],
    local_queues: Iterable[Mapping[str, Any]],
    workloads: Sequence[Mapping[str, Any]],
    title: str,
) -> Table:
    """Per ClusterQueue: nominal GPUs, GPUs held by its Workloads' admissions, who holds and who waits.

    A Workload belongs to the ClusterQueue its LocalQueue (spec.queueName in its namespace) points at.
    """
    routes = {
        (str(q["metadata"].get("namespace")), str(q["metadata"]["name"])): str(
            (q.get("spec") or {}).get("clusterQueue")
        )
        for q in local_queues
    }

    def cluster_queue_of(workload: Mapping[str, Any]) -> str | None:
        key = (str(workload["metadata"].get("namespace")), str((workload.get("spec") or {}).get("queueName")))
        return routes.get(key)

    table = new_table(title, ("CLUSTERQUEUE", "NOMINAL GPUS", "GPUS IN USE", "HOLDING QUOTA", "WAITING"))
    for queue in cluster_queues:
        name = queue["metadata"]["name"]
        queued = [w for w in workloads if cluster_queue_of(w) == name]
        holding = [w for w in queued if gpus_held(w)]
        waiting = [w for w in queued if workload_phase(w) == "Pending" or workload_phase(w) == "Preempted"]
        table.add_row(
            name,
            nominal_gpus(queue),
            str(sum(gpus_held(w) for w in holding)),
            ", ".join(str(owner_name(w)) for w in holding) or "-",
            ", ".join(str(owner_name(w)) for w in waiting) or "-",
        )
    return table
