"""Which ResourceFlavors suit a pod template, and what flavor assignment remembers per pod set.

A flavor suits a pod set when its node taints are tolerated and its node labels agree with the
pod set's node selector and required node affinity (Kueue pkg/scheduler/flavorassigner). The
verdicts and per-resource totals are kept in a ``PodSetPlan`` per (pod set, count) on the
ClusterQueue, since every head of a deep queue of copies asks the same. This module sits below
``cluster`` (which stores the plans) and ``flavors`` (which uses them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtimes.k8s.core import SCHEDULING_TAINT_EFFECTS, NodeSelectorTerm, tolerates_all
from scheduler.api.kueue import ResourceFlavor
from scheduler.engine.workloads import PodSetInfo


def flavor_mismatch(flavor: ResourceFlavor, pod_set: PodSetInfo) -> str | None:
    """Why ``pod_set`` cannot run on ``flavor``'s nodes, or None when it can."""
    spec = flavor.spec
    tolerations = [*pod_set.tolerations, *spec.tolerations]
    if not tolerates_all(tolerations, spec.node_taints, SCHEDULING_TAINT_EFFECTS):
        untolerated = next(
            t
            for t in spec.node_taints
            if t.effect in SCHEDULING_TAINT_EFFECTS and not any(x.tolerates(t) for x in tolerations)
        )
        return f"untolerated taint {untolerated.key}={untolerated.value or ''}:{untolerated.effect} in flavor {flavor.name}"
    labels = spec.node_labels
    for key, value in pod_set.node_selector.items():
        if key in labels and labels[key] != value:
            return f"flavor {flavor.name} doesn't match node selector {key}={value}"
    if pod_set.required_affinity and not any(_term_matches(t, labels) for t in pod_set.required_affinity):
        return f"flavor {flavor.name} doesn't match the required node affinity"
    return None


def _term_matches(term: NodeSelectorTerm, labels: dict[str, str]) -> bool:
    # Only keys the flavor defines are evaluated, as Kueue does: other keys are decided by the
    # kube-scheduler among the flavor's nodes.
    return all(req.matches(labels) for req in term.match_expressions if req.key in labels)


@dataclass(slots=True)
class PodSetPlan:
    """What assigning one pod set (at one count) in one ClusterQueue needs that usage never
    changes: the totals per resource, grouped by the ClusterQueue's resource groups, and which
    flavors suit the pod template. Every head of a deep queue of copies asks the same."""

    pod_set: PodSetInfo  # kept alive: its id keys the plan
    totals: dict[str, int]
    by_group: dict[int, list[str]]
    uncovered: str | None  # why not, when a requested resource is not covered
    verdicts: dict[str, tuple[ResourceFlavor, str | None]] = field(default_factory=dict)

    def mismatch(self, flavor: ResourceFlavor) -> str | None:
        """``flavor_mismatch``, remembered per flavor object (a changed flavor is a new object)."""
        name = flavor.metadata.name  # not ``flavor.name``: a property, which runs interpreted
        known = self.verdicts.get(name)
        if known is not None and known[0] is flavor:
            return known[1]
        verdict = flavor_mismatch(flavor, self.pod_set)
        self.verdicts[name] = (flavor, verdict)
        return verdict
