"""What a what-if change did, said from the runs: the change in the base's own numbers, and, where
a change made its own queue's wait worse, what the runs show for that queue.

A change names the queue it is about (``quota:CQ:...``, ``rate:CQ=...``); node and flavor changes
name none. ``describe_change`` reads the base rehearsal for the value before the change (a quota
"raised" to 512 GPUs may be a cut from 3,686). ``why_worse`` compares the queue's figures of the
two runs: its nominal quota, what it borrowed (borrowed quota is what other queues reclaim), the
preemptions its jobs suffered, jobs offered and left unfinished. When none of them moved against
it, it says so: nothing in the run explains it, which makes it a question for the engine, not a
story to tell.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api.kueue import ClusterQueue
from simulations.whatif.rehearsal import Rehearsal


@dataclass(frozen=True)
class ChangeSummary:
    target: str | None  # the ClusterQueue the change is about, if it names one
    words: str  # the change in the base's numbers


def _nominal(rehearsal: Rehearsal, cluster_queue: str, flavor: str, resource: str) -> str | None:
    for obj in rehearsal.built.objects:
        if isinstance(obj, ClusterQueue) and obj.name == cluster_queue:
            for group in obj.spec.resource_groups:
                for quotas in group.flavors:
                    for quota in quotas.resources:
                        if quotas.name == flavor and quota.name == resource:
                            return str(quota.nominal_quota)
    return None


def describe_change(text: str, base: Rehearsal) -> ChangeSummary:
    """The queue ``text`` is about and the change in words, with the value it replaces."""
    kind, _, rest = text.partition(":")
    if kind == "quota":
        queue, flavor, spec = [*rest.split(":"), "", ""][:3]
        resource, _, after = spec.partition("=")
        before = _nominal(base, queue, flavor, resource)
        if before is None:
            return ChangeSummary(queue, f"{queue}'s nominal {resource} in {flavor} set to {after} (none before)")
        direction = _direction(before, after, resource)
        return ChangeSummary(queue, f"{queue}'s nominal {resource} in {flavor}: {before} → {after}{direction}")
    if kind == "rate":
        queue, _, factor = rest.partition("=")
        return ChangeSummary(queue, f"{queue}'s arrivals × {factor}")
    return ChangeSummary(None, text)


def _direction(before: str, after: str, resource: str) -> str:
    from runtimes.k8s.quantity import Quantity

    old, new = Quantity(before).amount(resource), Quantity(after).amount(resource)
    return " (lowered)" if new < old else " (raised)" if new > old else " (unchanged)"


def _moved(figure: str, base: Mapping[str, Any], variant: Mapping[str, Any]) -> tuple[Any, Any] | None:
    before, after = base.get(figure), variant.get(figure)
    if isinstance(before, int | float) and isinstance(after, int | float) and before != after:
        return before, after
    return None


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 or float(value).is_integer() else f"{value:.3g}"


def why_worse(
    summary: ChangeSummary, base: Mapping[str, Mapping[str, Any]], variant: Mapping[str, Mapping[str, Any]], unit: str
) -> list[str] | None:
    """Where the change made its own queue's wait p95 worse: what the runs show for that queue
    (each line one finding); None where it did not (or the change names no queue)."""
    queue = summary.target
    if queue is None or queue not in base or queue not in variant:
        return None
    waits = _moved("wait_p95_s", base[queue], variant[queue])
    if waits is None or waits[1] <= waits[0]:
        return None
    found = [f"{queue}'s wait p95 rose {_number(waits[0])} → {_number(waits[1])} s; the change: {summary.words}"]
    before, after = base[queue], variant[queue]
    if (offered := _moved("jobs", before, after)) and offered[1] > offered[0]:
        found.append(f"it offered more jobs in the window ({offered[0]:,} → {offered[1]:,})")
    if (borrowed := _moved("borrowing_mean", before, after)) and borrowed[1] > borrowed[0]:
        found.append(
            f"it leaned more on borrowed quota ({_number(borrowed[0])} → {_number(borrowed[1])} {unit} on average), "
            "which the lenders reclaim when their own jobs arrive"
        )
    if (preempted := _moved("preemptions", before, after)) and preempted[1] > preempted[0]:
        found.append(f"its jobs were preempted more often ({preempted[0]:,} → {preempted[1]:,} preemptions)")
    if (unfinished := _moved("unfinished", before, after)) and unfinished[1] > unfinished[0]:
        found.append(f"more of its jobs were still unfinished at the end ({unfinished[0]:,} → {unfinished[1]:,})")
    if len(found) == 1:
        found.append(
            "nothing in the run explains it (same jobs, no more borrowing, no more preemptions): rerun with "
            "another --seed, and report it with both seeds if it holds"
        )
    return found
