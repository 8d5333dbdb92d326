"""The chaos benchmark's audit: every committed write replayed in order, counting admissions given
twice, quota crossed, and what each Workload last looked like (for a lost job's story).

It reads the API server's store itself, never a watch, so no injected fault can hide a write.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtimes.k8s.quantity import Quantity
from trainyard.benchmarks.launch_measures import owner_name

if TYPE_CHECKING:
    from sandbox.apiserver.records import StoredEvent


def admitted_cpu(workload: dict[str, Any]) -> tuple[str, int] | None:
    """The ClusterQueue and milli-CPU a Workload's committed admission holds, or None."""
    admission = (workload.get("status") or {}).get("admission")
    if not admission:
        return None
    total = 0
    for assignment in admission.get("podSetAssignments") or []:
        usage = (assignment.get("resourceUsage") or {}).get("cpu")
        if usage is not None:
            total += Quantity(str(usage)).amount("cpu")
    return str(admission.get("clusterQueue")), total


def finished(workload: dict[str, Any]) -> bool:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Finished" and c.get("status") == "True" for c in conditions)


@dataclass
class Audit:
    """Every committed write, in order: admissions, JobSets and quota at each step."""

    limit_milli: int  # per ClusterQueue: its nominal plus what it may borrow (the rest of the cohort)
    cohort_milli: int
    holding: dict[str, tuple[str, int]] = field(default_factory=dict)  # workload -> (queue, milli-cpu)
    usage: Counter[str] = field(default_factory=Counter)
    finished: set[str] = field(default_factory=set)
    workload_of: dict[str, str] = field(default_factory=dict)  # trainjob -> workload
    jobsets: Counter[str] = field(default_factory=Counter)  # trainjob -> live JobSets
    double_admitted: set[str] = field(default_factory=set)
    last_state: dict[str, str] = field(default_factory=dict)  # workload -> its last conditions, for a lost job's story
    quota_violations: int = 0
    violation_examples: list[str] = field(default_factory=list)  # the first few, each with who held what
    admissions: int = 0

    def observe(self, event: StoredEvent) -> None:
        """A write committed to the embedded server's store."""
        self.record(event.rtype.kind, event.type, event.obj)

    def record(self, kind: str, change: str, obj: dict[str, Any]) -> None:
        """One committed write: ``change`` is ADDED, MODIFIED or DELETED (a store's, or etcd's history's)."""
        if kind == "Workload":
            self._workload(change, obj)
        elif kind == "JobSet":
            owner = owner_name(obj)
            if owner is None:
                return
            if change == "ADDED":
                self.jobsets[owner] += 1
                if self.jobsets[owner] > 1:
                    self.double_admitted.add(f"trainjob {owner}: two JobSets at once")
            elif change == "DELETED":
                self.jobsets[owner] -= 1

    def _workload(self, change: str, obj: dict[str, Any]) -> None:
        name = str(obj["metadata"]["name"])
        owner = owner_name(obj)
        if owner is not None:
            self.workload_of[owner] = name
        # A finished Workload keeps its admission (as Kueue's do) but no longer holds quota.
        now = None if change == "DELETED" or finished(obj) else admitted_cpu(obj)
        before = self.holding.get(name)
        if now is not None and before is None:
            self.admissions += 1
            if name in self.finished:
                self.double_admitted.add(f"workload {name}: admitted after it finished")
        if now is not None and before is not None and now != before:
            self.double_admitted.add(f"workload {name}: a second admission without an eviction between")
        if before is not None:
            self.usage[before[0]] -= before[1]
            del self.holding[name]
        if now is not None:
            self.holding[name] = now
            self.usage[now[0]] += now[1]
        if change != "DELETED" and finished(obj):
            self.finished.add(name)
        conditions = (obj.get("status") or {}).get("conditions") or []
        self.last_state[name] = (
            change + " " + ", ".join(f"{c.get('type')}={c.get('status')}({c.get('reason')})" for c in conditions)
        )
        if any(used > self.limit_milli for used in self.usage.values()) or sum(self.usage.values()) > self.cohort_milli:
            self.quota_violations += 1
            if len(self.violation_examples) < 3:
                self.violation_examples.append(self._violation_story(name))

    def _violation_story(self, name: str) -> str:
        """The write that crossed a limit, the usage per queue after it, and every holder's last state."""
        usage = ", ".join(f"{queue}={milli}m" for queue, milli in sorted(self.usage.items()))
        holders = "; ".join(
            f"{holder} {queue} {milli}m [{self.last_state.get(holder, '')}]"
            for holder, (queue, milli) in sorted(self.holding.items())
        )
        return f"quota crossed by {name} ({self.last_state.get(name, '')}): usage {usage}; holders: {holders}"
