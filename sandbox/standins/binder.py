"""A binder in place of kube-scheduler: puts each schedulable Pending pod on a node that can take it.

A pod is considered when it is Pending, has no ``nodeName``, no scheduling gates, and asks for
the default scheduler. A node can take it when it is Ready and schedulable, matches the pod's
``nodeSelector`` and required node affinity, carries no NoSchedule/NoExecute taint the pod does
not tolerate, and has room: the requests of the pods already on it (not finished) plus this
pod's fit its allocatable, the pod count included. The rules are trainyard's own helpers
(``runtimes.k8s.core``: ``Node.schedulable``, ``Toleration.tolerates``, ``pod_requests``,
``NodeSelectorRequirement.matches``), so the binder and the engine read a node the same way.
Among the nodes that fit, the first by name is chosen (no scoring: trainyard pins pods with node
selectors). Binding uses ``pods/binding``; a pod that fits nowhere gets ``PodScheduled=False``
(Unschedulable) with kube-scheduler's kind of message, and is retried when nodes or pods change.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from fractions import Fraction
from typing import Any

from pydantic import ValidationError

from runtimes.k8s.core import SCHEDULING_TAINT_EFFECTS, Node, NodeSelectorTerm, PodSpec, pod_requests
from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.runtime import ReconcileResult
from scheduler.kube import KubeApiError, KubeClient, patch_status

from .conditions import now_text, set_condition
from .keys import Standin, object_key, reconciled, split_key

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER = "default-scheduler"
TERMINAL_PHASES = ("Succeeded", "Failed")
Usage = dict[str, Fraction]


def _requests(pod: dict[str, Any]) -> Usage:
    spec = PodSpec.model_validate(pod.get("spec") or {})
    usage = {name: quantity.value for name, quantity in pod_requests(spec).items()}
    usage["pods"] = Fraction(1)
    return usage


def _holds_resources(pod: dict[str, Any] | None) -> bool:
    if pod is None or not (pod.get("spec") or {}).get("nodeName"):
        return False
    return (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES


def _wants_binding(pod: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    return (
        not spec.get("nodeName")
        and not spec.get("schedulingGates")
        and spec.get("schedulerName", DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER
        and (pod.get("status") or {}).get("phase", "Pending") == "Pending"
        and not pod["metadata"].get("deletionTimestamp")
    )


def _term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    labels = node.metadata.labels or {}
    fields = {"metadata.name": node.metadata.name or ""}
    return all(r.matches(labels) for r in term.match_expressions) and all(r.matches(fields) for r in term.match_fields)


class Binder(Standin):
    """A ``scheduler.controllers`` reconciler of pod keys; ``queue`` is the one its controller works."""

    name = "binder-standin"

    def __init__(self, client: KubeClient, cache: ClusterCache, *, workers: int = 1) -> None:
        # one worker: binding decisions read and update the same usage, so they go one at a time
        super().__init__(client, cache, workers=workers)
        self.nodes: dict[str, Node] = {}
        self.usage: dict[str, Usage] = {}  # node -> requests of the pods on it, as the cache shows them
        self.assumed: dict[str, tuple[str, Usage]] = {}  # bound by this binder, not yet seen bound
        self.unschedulable: set[str] = set()
        self.bound = 0
        cache.on_change("Pod", self._pod_changed)
        cache.on_change("Node", self._node_changed)

    # --------------------------------------------------------------------------- indexes

    def _pod_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        for pod, sign in ((old, -1), (new, 1)):
            if pod is not None and _holds_resources(pod):
                # a pod spec trainyard cannot read counts for nothing (this binder never bound it)
                with contextlib.suppress(ValidationError):
                    self._add(str(pod["spec"]["nodeName"]), _requests(pod), sign)
        if new is not None and new["spec"].get("nodeName"):
            self.assumed.pop(object_key(new), None)
        if old is not None and _holds_resources(old) and not _holds_resources(new):
            self._retry_unschedulable()  # room was freed
        if new is not None and _wants_binding(new):
            self.queue.add(object_key(new))
        elif new is None and old is not None:
            self.unschedulable.discard(object_key(old))
            self.assumed.pop(object_key(old), None)

    def _add(self, node: str, usage: Usage, sign: int) -> None:
        total = self.usage.setdefault(node, {})
        for name, amount in usage.items():
            total[name] = total.get(name, Fraction(0)) + sign * amount

    def _node_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            if old is not None:
                self.nodes.pop(str(old["metadata"]["name"]), None)
            return
        try:
            self.nodes[str(new["metadata"]["name"])] = Node.model_validate(new)
        except ValidationError as error:
            log.warning("binder: ignoring Node %s: %s", new["metadata"].get("name"), error)
            return
        self._retry_unschedulable()

    def _retry_unschedulable(self) -> None:
        for key in list(self.unschedulable):
            self.queue.add(key)

    # --------------------------------------------------------------------------- binding

    async def reconcile(self, key: str) -> ReconcileResult:
        return await reconciled(self._reconcile(key))

    async def _reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        pod = self.cache.get("Pod", name, namespace)
        if pod is None or not _wants_binding(pod) or key in self.assumed:
            self.unschedulable.discard(key)
            return
        try:
            spec = PodSpec.model_validate(pod.get("spec") or {})
            wanted = _requests(pod)
        except ValidationError as error:
            log.warning("binder: cannot read pod %s/%s: %s", namespace, name, error)
            return
        reasons: Counter[str] = Counter()
        for node_name in sorted(self.nodes):
            why = self._misfit(spec, wanted, self.nodes[node_name])
            if why is None:
                await self._bind(pod, node_name, wanted)
                return
            reasons[why] += 1
        self.unschedulable.add(key)
        await self._report_unschedulable(pod, reasons)

    def _misfit(self, spec: PodSpec, wanted: Usage, node: Node) -> str | None:
        """Why the node cannot take the pod (kube-scheduler's wording), or None when it can."""
        if not node.ready:
            return "node(s) were not ready"
        if node.spec.unschedulable:
            return "node(s) were unschedulable"
        labels = node.metadata.labels or {}
        if any(labels.get(k) != v for k, v in (spec.node_selector or {}).items()):
            return "node(s) didn't match Pod's node affinity/selector"
        required = spec.affinity.node_affinity if spec.affinity and spec.affinity.node_affinity else None
        terms = required.required_during_scheduling_ignored_during_execution if required else None
        if terms is not None and not any(_term_matches(t, node) for t in terms.node_selector_terms):
            return "node(s) didn't match Pod's node affinity/selector"
        tolerations = spec.tolerations or []
        for taint in node.spec.taints:
            if taint.effect in SCHEDULING_TAINT_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
                return f"node(s) had untolerated taint {{{taint.key}: {taint.value or ''}}}"
        used = dict(self.usage.get(node.metadata.name or "", {}))
        for assumed_node, usage in self.assumed.values():
            if assumed_node == node.metadata.name:
                for resource, amount in usage.items():
                    used[resource] = used.get(resource, Fraction(0)) + amount
        allocatable = {name: q.value for name, q in node.status.allocatable.items()}
        for resource, amount in sorted(wanted.items()):
            if amount <= 0:
                continue
            if resource == "pods" and "pods" not in allocatable:
                continue  # a node that does not say how many pods it takes is not limited here
            if used.get(resource, Fraction(0)) + amount > allocatable.get(resource, Fraction(0)):
                return "Too many pods" if resource == "pods" else f"Insufficient {resource}"
        return None

    async def _bind(self, pod: dict[str, Any], node: str, wanted: Usage) -> None:
        key = object_key(pod)
        namespace, name = split_key(key)
        self.assumed[key] = (node, wanted)
        try:
            await self.client.bind_pod(name, str(namespace), node)
        except KubeApiError as error:
            self.assumed.pop(key, None)
            if error.status in (404, 409):
                return  # gone, gated meanwhile or bound by someone else: the cache will say which
            raise
        except BaseException:
            self.assumed.pop(key, None)
            raise
        self.bound += 1
        self.unschedulable.discard(key)

    async def _report_unschedulable(self, pod: dict[str, Any], reasons: Counter[str]) -> None:
        total = len(self.nodes)
        detail = ", ".join(f"{count} {why}" for why, count in sorted(reasons.items()))
        message = f"0/{total} nodes are available" + (f": {detail}." if detail else ".")
        conditions = (pod.get("status") or {}).get("conditions") or []
        updated = set_condition(conditions, "PodScheduled", False, "Unschedulable", message, lastProbeTime=None)
        if updated == conditions:
            return
        for condition in updated:
            if condition.get("type") == "PodScheduled" and "lastTransitionTime" not in condition:
                condition["lastTransitionTime"] = now_text()
        metadata = pod["metadata"]
        await patch_status(
            self.client, "Pod", metadata["name"], metadata.get("namespace"), {"conditions": updated}, attempts=1
        )
