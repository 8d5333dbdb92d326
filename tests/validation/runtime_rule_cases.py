"""One runtime per rule the runtimes webhook (``/validate/runtimes``) enforces on a runtime.

Each case is the built-in torch-distributed runtime with one change; ``test_rule_coverage``
checks that ``render --runtime FILE`` refuses it with the webhook's words and that together the
cases reach every rule of ``runtimes.runtime_validation``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
JOB = "spec.template.spec.replicatedJobs.0"
POD = f"{JOB}.template.spec.template.spec"
POD_RULES = f"{JOB}.template.spec.podFailurePolicy.rules"
JOBSET = "spec.template.spec"
BASE: dict[str, Any] = yaml.safe_load((REPO / "manifests" / "runtimes" / "torch_distributed.yaml").read_text())


def _set(document: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    target: Any = document
    for step in parents:
        target = target[int(step)] if step.isdigit() else target.setdefault(step, {})
    if last.isdigit():
        target[int(last)] = value
    else:
        target[last] = value


def runtime(**changes: Any) -> dict[str, Any]:
    """The torch runtime with ``changes`` (dotted path, ``__`` for ``.``) applied."""
    document = copy.deepcopy(BASE)
    for path, value in changes.items():
        _set(document, path.replace("__", "."), value)
    return document


def _two_jobs() -> list[dict[str, Any]]:
    job = BASE["spec"]["template"]["spec"]["replicatedJobs"][0]
    return [copy.deepcopy(job), copy.deepcopy(job)]


def _key(path: str) -> str:
    return path.replace(".", "__")


RUNTIME_RULE_CASES: list[tuple[str, dict[str, Any]]] = [
    ("ml-policy-unknown", runtime(spec__mlPolicy={"numNodes": 1, "torch": {}, "paddle": {}})),
    ("ml-policy-flux", runtime(spec__mlPolicy={"numNodes": 1, "flux": {}})),
    (
        "elastic-with-num-nodes",
        runtime(spec__mlPolicy={"numNodes": 1, "torch": {"elasticPolicy": {"minNodes": 1, "maxNodes": 2}}}),
    ),
    ("torch-num-proc-per-node-zero", runtime(spec__mlPolicy={"numNodes": 1, "torch": {"numProcPerNode": 0}})),
    ("torch-without-node-job", runtime(**{_key(f"{JOB}.name"): "worker"})),
    ("mpi-num-proc-per-node-zero", runtime(spec__mlPolicy={"numNodes": 1, "mpi": {"numProcPerNode": 0}})),
    ("dns-hostnames-off", runtime(**{_key(f"{JOBSET}.network"): {"enableDNSHostnames": False}})),
    ("pod-group-unknown", runtime(spec__podGroupPolicy={"kaiScheduler": {}})),
    ("coscheduling-timeout-negative", runtime(spec__podGroupPolicy={"coscheduling": {"scheduleTimeoutSeconds": -1}})),
    ("no-replicated-jobs", runtime(**{_key(f"{JOBSET}.replicatedJobs"): []})),
    ("job-name-empty", runtime(**{_key(f"{JOB}.name"): ""})),
    ("job-name-twice", runtime(**{_key(f"{JOBSET}.replicatedJobs"): _two_jobs()})),
    ("trainer-replicas-two", runtime(**{_key(f"{JOB}.replicas"): 2})),
    ("trainer-container-missing", runtime(**{_key(f"{POD}.containers.0.name"): "main"})),
    ("restart-policy-with-pod-failure-policy", runtime(**{_key(f"{POD}.restartPolicy"): "OnFailure"})),
    ("pod-failure-action", runtime(**{_key(f"{POD_RULES}.0.action"): "Explode"})),
    ("pod-failure-both-matchers", runtime(**{_key(f"{POD_RULES}.0.onExitCodes"): {"operator": "In", "values": [3]}})),
    ("exit-codes-operator", runtime(**{_key(f"{POD_RULES}.1.onExitCodes.operator"): "Maybe"})),
    ("exit-codes-empty", runtime(**{_key(f"{POD_RULES}.1.onExitCodes.values"): []})),
    ("exit-code-zero-in", runtime(**{_key(f"{POD_RULES}.1.onExitCodes.values"): [0]})),
    ("exit-codes-container", runtime(**{_key(f"{POD_RULES}.1.onExitCodes.containerName"): "other"})),
    ("success-operator", runtime(**{_key(f"{JOBSET}.successPolicy"): {"operator": "Some"}})),
    (
        "success-target-unknown",
        runtime(**{_key(f"{JOBSET}.successPolicy"): {"operator": "All", "targetReplicatedJobs": ["nope"]}}),
    ),
    ("max-restarts-negative", runtime(**{_key(f"{JOBSET}.failurePolicy.maxRestarts"): -1})),
    ("failure-rule-name", runtime(**{_key(f"{JOBSET}.failurePolicy.rules.0.name"): "1bad"})),
    ("failure-rule-action", runtime(**{_key(f"{JOBSET}.failurePolicy.rules.0.action"): "Explode"})),
    ("failure-rule-reason", runtime(**{_key(f"{JOBSET}.failurePolicy.rules.0.onJobFailureReasons"): ["Tired"]})),
    ("depends-on-unknown", runtime(**{_key(f"{JOB}.dependsOn"): [{"name": "nope", "status": "Ready"}]})),
    ("depends-on-status", runtime(**{_key(f"{JOB}.dependsOn"): [{"name": "node", "status": "Started"}]})),
]
