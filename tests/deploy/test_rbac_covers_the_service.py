"""The install's RBAC lets the real controllers do what they do: every request the controller
service sends to the sandbox API server (its request log) must be granted by manifests/install's
rules, as the API server's RBAC authorizer would decide (verb, group, resource/subresource,
namespace, resourceNames)."""

from __future__ import annotations

import asyncio

import pytest
from rbac_support import JOBSET_COMPLETED, allowed, granted_rules, served_requests

from sandbox.embedded import LocalCluster
from scheduler.controllers.constants import RUNTIME_PATCH_MANAGER
from scheduler.controllers.launcher.reconciler import LauncherMode
from tests.eventually import eventually
from trainyard.benchmarks.controller import queue_objects, trainjob


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

        await eventually(lambda: len(launched()) == 1, "one TrainJob launched (the quota holds one job)")
        await asyncio.sleep(0.2)
        (first,) = launched()
        # The JobSet (or Trainer) controller's part, written straight into the store so that no
        # request of ours is logged: the launched job completes, its quota is released, and the
        # other job is admitted and launched.
        if launcher_mode == "jobset":
            done = server.store.get(jobset_type, namespace, first)
            done["status"] = {"conditions": [JOBSET_COMPLETED], "terminalState": "Completed"}
            server.store.update(jobset_type, namespace, first, done, status=True)
        else:
            done = server.store.get(trainjob_type, namespace, first)
            done["status"] = {"conditions": [dict(JOBSET_COMPLETED, type="Complete")]}
            server.store.update(trainjob_type, namespace, first, done, status=True)
        await eventually(
            lambda: launched() == {"first", "second"}, "the other TrainJob launched once the first finished"
        )
        await asyncio.sleep(0.3)  # status mirroring and Events settle
        await replica.stop()

    rules = granted_rules()
    requests = served_requests(server)
    assert {str(request) for request in requests if not allowed(rules, request)} == set()
    verbs = {(request.verb, request.resource) for request in requests}
    # the run did exercise the writes the RBAC is about
    launch_write = ("create", "jobsets") if launcher_mode == "jobset" else ("update", "trainjobs")
    for expected in [("create", "workloads"), launch_write, ("patch", "trainjobs"), ("create", "leases")]:
        assert expected in verbs, f"the scenario made no {expected} request"
