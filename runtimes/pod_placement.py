"""Where the admission engine placed a TrainJob's gang, written into its JobSet.

A :class:`PodPlacement` says, per replicated job, which node each pod goes to (by global pod
index = job index × pods per job + completion index) and which topology domain the gang got
(``{level label: value}``, e.g. ``{"cloud.provider.com/topology-block": "b1"}``).

How it is rendered, and why this way. A JobSet cannot address one pod: every Job of a
replicated job, and every pod of such a Job, is stamped from one pod template. Splitting a
replicated job into one replicated job per index would pin pods exactly but would rename them
(``<js>-<rjob>-<jobIdx>-<podIdx>``), breaking the DNS names torch's ``PET_MASTER_ADDR`` and MPI's
hostfile rely on and JobSet's completion and failure accounting. So each replicated job's
pod template gets, ANDed with whatever the runtime already asks:

* ``nodeSelector`` on the domain labels: no pod can leave the topology domain the engine chose,
  even if nodes come and go — the guarantee topology-aware scheduling is about;
* required node affinity ``kubernetes.io/hostname In [the job's nodes]``: the pods can only use
  the nodes the engine counted capacity on (the hostname label is the node's name on kubelet
  and KWOK nodes, and is the lowest level of Kueue TAS topologies). All pods of a replicated job
  share one template, hence equal requests, so any assignment of them to these nodes that the
  kube-scheduler finds fits exactly where the engine's did;
* the annotation ``trainyard.io/pod-placement``: the exact index → node list, for components
  that can act per pod (the local launcher, the simulator, a pod-binding webhook).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from runtimes.errors import FieldError

HOSTNAME_LABEL = "kubernetes.io/hostname"
POD_PLACEMENT_ANNOTATION = "trainyard.io/pod-placement"


@dataclass(frozen=True)
class PodPlacement:
    # replicated job name → node name for every global pod index of that job
    nodes: dict[str, list[str]]
    # the chosen topology domain: node label → value, from the topmost level down
    domain: dict[str, str] = field(default_factory=dict)

    def node_for(self, job_name: str, job_index: int, completion_index: int, pods_per_job: int) -> str:
        return self.nodes[job_name][job_index * pods_per_job + completion_index]


def placement_errors(jobset: dict[str, Any], placement: PodPlacement) -> list[FieldError]:
    """Placements that do not fit the rendered JobSet (unknown job, wrong number of pods)."""
    jobs = {job["name"]: job for job in jobset.get("spec", {}).get("replicatedJobs") or []}
    errors: list[FieldError] = []
    for name, nodes in placement.nodes.items():
        job = jobs.get(name)
        if job is None:
            errors.append(
                FieldError(
                    f"placement.nodes[{name}]",
                    f"the JobSet has no replicated job {name!r}; it has: {', '.join(jobs) or '(none)'}",
                )
            )
            continue
        expected = _pod_count(job)
        if len(nodes) != expected:
            errors.append(
                FieldError(
                    f"placement.nodes[{name}]",
                    f"lists {len(nodes)} nodes but replicated job {name!r} runs {expected} pods "
                    "(replicas × parallelism); give one node per pod index",
                )
            )
    return errors


def _pod_count(job: dict[str, Any]) -> int:
    spec = (job.get("template") or {}).get("spec") or {}
    parallelism = spec.get("parallelism", 1)
    completions = spec.get("completions", parallelism)
    replicas = job.get("replicas", 1)
    return int(replicas) * min(int(parallelism), int(completions))


def apply_placement(jobset: dict[str, Any], placement: PodPlacement) -> None:
    """Write the placement into the JobSet dict (see the module docstring for the mechanism)."""
    for job in jobset.get("spec", {}).get("replicatedJobs") or []:
        nodes = placement.nodes.get(job.get("name", ""))
        if not nodes:
            continue
        pod_template = job.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
        pod_spec = pod_template.setdefault("spec", {})
        if placement.domain:
            pod_spec["nodeSelector"] = {**(pod_spec.get("nodeSelector") or {}), **placement.domain}
        _require_nodes(pod_spec, sorted(set(nodes)))
        metadata = pod_template.setdefault("metadata", {})
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            POD_PLACEMENT_ANNOTATION: json.dumps(nodes, separators=(",", ":")),
        }


def _require_nodes(pod_spec: dict[str, Any], nodes: list[str]) -> None:
    """AND ``hostname In nodes`` into the required node affinity.

    Required node-selector terms are ORed, so the requirement is added to every existing term
    (a pod must satisfy the runtime's constraint and the placement) or forms the only term.
    """
    requirement = {"key": HOSTNAME_LABEL, "operator": "In", "values": nodes}
    affinity = pod_spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        required["nodeSelectorTerms"] = [{"matchExpressions": [requirement]}]
        return
    for term in terms:
        # Expressions of one term are ANDed, so a runtime's own hostname rule still holds.
        term["matchExpressions"] = [*(term.get("matchExpressions") or []), requirement]
    required["nodeSelectorTerms"] = terms
