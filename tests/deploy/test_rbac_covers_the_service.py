"""The install's RBAC lets the real controllers do what they do: every request the controller
service sends to the sandbox API server (its request log) must be granted by manifests/install's
rules, as the API server's RBAC authorizer would decide (verb, group, resource/subresource,
namespace, resourceNames)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.apiserver.routes import parse_target
from sandbox.embedded import LocalCluster
from scheduler.controllers.constants import RUNTIME_PATCH_MANAGER
from scheduler.controllers.launcher import LauncherMode
from trainyard.benchmarks.controller import queue_objects, trainjob

ROOT = Path(__file__).resolve().parents[2]
RBAC_FILES = [
    ROOT / "manifests" / "webhook" / "rbac.yaml",
    ROOT / "manifests" / "install" / "controller-rbac.yaml",
    ROOT / "manifests" / "install" / "leader-election-rbac.yaml",
]
SERVICE_NAMESPACE = "trainyard-system"


def granted_rules() -> list[tuple[dict[str, Any], str | None]]:
    """(rule, namespace it applies in: None for a ClusterRole's rules)."""
    rules = []
    for path in RBAC_FILES:
        for document in yaml.safe_load_all(path.read_text()):
            if document and document["kind"] in {"ClusterRole", "Role"}:
                scope = document["metadata"].get("namespace") if document["kind"] == "Role" else None
                rules.extend((rule, scope) for rule in document["rules"])
    return rules


def allowed(
    rules: list[tuple[dict[str, Any], str | None]],
    verb: str,
    group: str,
    resource: str,
    namespace: str | None,
    name: str | None,
) -> bool:
    for rule, scope in rules:
        if scope is not None and scope != namespace:
            continue
        if group not in rule["apiGroups"] or resource not in rule["resources"] or verb not in rule["verbs"]:
            continue
        names = rule.get("resourceNames")
        if names and (name is None or name not in names):
            continue
        return True
    return False


async def until(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


COMPLETED = {
    "type": "Completed",
    "status": "True",
    "reason": "AllJobsCompleted",
    "message": "jobset completed successfully",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


@pytest.mark.parametrize("launcher_mode", ["jobset", "trainer"])
async def test_every_request_the_controllers_make_is_granted(launcher_mode: LauncherMode) -> None:
    namespace = "team"
    running = trainjob("first", namespace, nodes=2, cpu=1)
    running["spec"]["suspend"] = False  # one the webhook did not suspend: the queue controller suspends it
    objects = [*queue_objects(namespace, cpu=2), running, trainjob("second", namespace, nodes=2, cpu=1)]
    async with LocalCluster(objects) as cluster:
        server = cluster.server
        replica = await cluster.start_controllers(launcher_mode=launcher_mode, leader_elect=True, identity="replica-0")
        jobset_type = server.type_of("jobset.x-k8s.io/v1alpha2", "JobSet")
        trainjob_type = server.type_of("trainer.kubeflow.org/v1alpha1", "TrainJob")

        def launched() -> set[str]:
            if launcher_mode == "jobset":
                return {j["metadata"]["name"] for j in server.store.items(jobset_type, namespace)}
            # Launched by trainyard: resumed with its runtime patch. "first" starts unsuspended, so
            # "not suspended" alone would count it before the controllers have seen it.
            return {
                j["metadata"]["name"]
                for j in server.store.items(trainjob_type, namespace)
                if not j["spec"]["suspend"]
                and any(p.get("manager") == RUNTIME_PATCH_MANAGER for p in j["spec"].get("runtimePatches") or ())
            }

        await until(lambda: len(launched()) == 1, "one TrainJob launched (the quota holds one job)")
        await asyncio.sleep(0.2)
        (first,) = launched()
        # The JobSet (or Trainer) controller's part, written straight into the store so that no
        # request of ours is logged: the launched job completes, its quota is released, and the
        # other job is admitted and launched.
        if launcher_mode == "jobset":
            done = server.store.get(jobset_type, namespace, first)
            done["status"] = {"conditions": [COMPLETED], "terminalState": "Completed"}
            server.store.update(jobset_type, namespace, first, done, status=True)
        else:
            done = server.store.get(trainjob_type, namespace, first)
            done["status"] = {"conditions": [dict(COMPLETED, type="Complete")]}
            server.store.update(trainjob_type, namespace, first, done, status=True)
        await until(lambda: launched() == {"first", "second"}, "the other TrainJob launched once the first finished")
        await asyncio.sleep(0.3)  # status mirroring and Events settle
        await replica.stop()

    rules = granted_rules()
    refused = set()
    for request in server.requests:
        target = parse_target(server.registry, request.path)
        resource = target.rtype.plural + (f"/{target.subresource}" if target.subresource else "")
        namespace_of = target.namespace
        if target.rtype.plural == "leases":
            # LocalCluster elects in "default"; the Deployment's Lease lives in the service's namespace.
            namespace_of = SERVICE_NAMESPACE
        if not allowed(rules, request.verb, target.rtype.group, resource, namespace_of, target.name):
            refused.add(f"{request.verb} {target.rtype.group or 'core'}/{resource}")
    assert refused == set()
    verbs = {(r.verb, parse_target(server.registry, r.path).rtype.plural) for r in server.requests}
    # the run did exercise the writes the RBAC is about
    launch_write = ("create", "jobsets") if launcher_mode == "jobset" else ("update", "trainjobs")
    for expected in [("create", "workloads"), launch_write, ("patch", "trainjobs"), ("create", "leases")]:
        assert expected in verbs, f"the scenario made no {expected} request"
