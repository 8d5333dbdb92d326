"""The install's RBAC grants nothing the service does not use: every verb of every rule in
manifests/install and manifests/webhook is the verb of some request the service sent in the
scenarios below (the sandbox API server's request log), the reverse of
test_rbac_covers_the_service. A grant no code path needs is a permission an attacker who takes
the Pod gets for free.

The scenarios drive the real controller service through what it does in a cluster: leader election,
TAS admission and preemption, JobSet, PodGroup and MPI launches, pod ungating, status mirroring,
queue status, Events, and a conflicting status write read back. What other controllers would do (the JobSet and
Job controllers creating pods, a JobSet completing) the tests write straight into the store, so
that every logged request is the service's own.
"""

from __future__ import annotations

import copy
from typing import Any

from rbac_support import JOBSET_COMPLETED, Request, Rule, granted_rules, grants, served_requests

from runtimes.api.jobset import JOB_COMPLETION_INDEX_ANNOTATION, JOB_INDEX_LABEL
from sandbox.apiserver import FakeApiServer
from sandbox.embedded import LocalCluster
from scheduler.controllers.ungater import REPLICATED_JOB_REPLICAS_LABEL, is_gated
from tests.eventually import eventually
from trainyard.benchmarks.controller import queue_objects
from trainyard.benchmarks.controller import trainjob as plain_trainjob
from trainyard.cli.cluster_demo.seed import TourJob, cluster_objects
from trainyard.cli.cluster_demo.seed import trainjob as tas_trainjob

JOBSET = "jobset.x-k8s.io/v1alpha2"
TRAINER = "trainer.kubeflow.org/v1alpha1"
# Not a request at all: the API server's OwnerReferencesPermissionEnforcement asks for it when an
# object is created with blockOwnerDeletion on a TrainJob (checked against the stored objects).
OWNER_FINALIZERS = Request("update", "trainer.kubeflow.org", "trainjobs/finalizers", None, None)


def _names(server: FakeApiServer, api_version: str, kind: str, namespace: str) -> set[str]:
    return {item["metadata"]["name"] for item in server.store.items(server.type_of(api_version, kind), namespace)}


def _status_written(server: FakeApiServer, kind: str) -> bool:
    return any(queue.get("status") for queue in server.store.items(server.type_of("kueue.x-k8s.io/v1beta2", kind)))


def _pods_of(jobset: dict[str, Any]) -> list[dict[str, Any]]:
    """The pods the JobSet and Job controllers create for ``jobset`` (job index 0 of each replicated job)."""
    name, namespace = jobset["metadata"]["name"], jobset["metadata"]["namespace"]
    pods = []
    for replicated in jobset["spec"]["replicatedJobs"]:
        job_spec = replicated["template"]["spec"]
        template = job_spec["template"]
        for index in range(int(job_spec.get("parallelism") or 1)):
            stamp = {
                "jobset.sigs.k8s.io/jobset-name": name,
                "jobset.sigs.k8s.io/replicatedjob-name": replicated["name"],
                REPLICATED_JOB_REPLICAS_LABEL: str(replicated.get("replicas", 1)),
                JOB_INDEX_LABEL: "0",
                JOB_COMPLETION_INDEX_ANNOTATION: str(index),
            }
            metadata = template.get("metadata") or {}
            pods.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{name}-{replicated['name']}-0-{index}",
                        "namespace": namespace,
                        "labels": {**(metadata.get("labels") or {}), **stamp},
                        "annotations": {**(metadata.get("annotations") or {}), **stamp},
                    },
                    "spec": copy.deepcopy(template["spec"]),
                }
            )
    return pods


async def _tas_preemption_run() -> FakeApiServer:
    """Two teams' low-priority gangs fill the fabric and run (pods ungated); a high-priority gang
    preempts one (its JobSet deleted, its TrainJob suspended), runs and completes."""
    low = tas_trainjob(TourJob("low", "team-a", nodes=2, priority="low", run_seconds=60))
    low["spec"]["suspend"] = False  # one that got past the webhook: the queue controller suspends it
    other = tas_trainjob(TourJob("other", "team-b", nodes=2, priority="low", run_seconds=60))
    async with LocalCluster([*cluster_objects(), low, other]) as cluster:
        server = cluster.server
        replica = await cluster.start_controllers(leader_elect=True, identity="replica-0")
        # one Workload status write meets a conflict: the queue controller reads the Workload back
        server.faults.fail("patch", "/workloads/", code=409, times=1)
        await eventually(lambda: "low" in _names(server, JOBSET, "JobSet", "team-a"), "the low gang launched")
        await eventually(lambda: "other" in _names(server, JOBSET, "JobSet", "team-b"), "the other gang launched")
        pods = [
            pod
            for team in ("team-a", "team-b")
            for job in server.store.items(server.type_of(JOBSET, "JobSet"), team)
            for pod in _pods_of(job)
        ]
        for pod in pods:
            server.seed(pod)
        pod_type = server.type_of("v1", "Pod")

        def ungated() -> bool:
            return not any(is_gated(pod) for team in ("team-a", "team-b") for pod in server.store.items(pod_type, team))

        await eventually(ungated, "every gang's pods pinned and ungated")
        server.seed(tas_trainjob(TourJob("high", "team-a", nodes=2, priority="high", run_seconds=60)))
        await eventually(
            lambda: _names(server, JOBSET, "JobSet", "team-a") == {"high"}, "the high gang launched in low's place"
        )
        jobset_type = server.type_of(JOBSET, "JobSet")
        done = server.store.get(jobset_type, "team-a", "high")
        done["status"] = {"conditions": [JOBSET_COMPLETED], "terminalState": "Completed"}
        server.store.update(jobset_type, "team-a", "high", done, status=True)
        trainjob_type = server.type_of(TRAINER, "TrainJob")

        def high_complete() -> bool:
            conditions = (server.store.get(trainjob_type, "team-a", "high").get("status") or {}).get("conditions")
            return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions or ())

        await eventually(high_complete, "the high TrainJob's status mirrored from its JobSet")
        await eventually(
            lambda: _status_written(server, "ClusterQueue"), "the queue-status controller's ClusterQueue status"
        )
        await eventually(
            lambda: _status_written(server, "LocalQueue"), "the queue-status controller's LocalQueue status"
        )
        await replica.stop()
    return server


async def _mpi_run() -> FakeApiServer:
    """An MPI (DeepSpeed) TrainJob admitted and launched: its SSH Secret, hostfile ConfigMap, PodGroup, JobSet."""
    objects = [*queue_objects("mpi", cpu=4, runtime="deepspeed_distributed")]
    objects.append(plain_trainjob("ds", "mpi", nodes=1, cpu=1, runtime="deepspeed-distributed"))
    async with LocalCluster(objects) as cluster:
        server = cluster.server
        replica = await cluster.start_controllers()
        await eventually(lambda: "ds" in _names(server, JOBSET, "JobSet", "mpi"), "the MPI job launched")
        await replica.stop()
    return server


def _blocks_trainjob_deletion(server: FakeApiServer) -> bool:
    """Whether the service created an object owned by a TrainJob with blockOwnerDeletion."""
    for kind in (("kueue.x-k8s.io/v1beta2", "Workload"), (JOBSET, "JobSet")):
        for item in server.store.items(server.type_of(*kind)):
            for owner in item["metadata"].get("ownerReferences") or ():
                if owner.get("kind") == "TrainJob" and owner.get("blockOwnerDeletion"):
                    return True
    return False


def _unused(rules: list[Rule], used: list[Request]) -> list[str]:
    """Every (verb, resource) a rule grants that no request used."""
    unused = []
    for rule, scope in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    granted = {**rule, "apiGroups": [group], "resources": [resource], "verbs": [verb]}
                    if not any(grants((granted, scope), request) for request in used):
                        unused.append(f"{verb} {group or 'core'}/{resource}")
    return unused


async def test_every_verb_the_install_grants_is_used_by_the_service() -> None:
    used: list[Request] = []
    for run in (_tas_preemption_run, _mpi_run):
        server = await run()
        used += served_requests(server)
        if _blocks_trainjob_deletion(server):
            used.append(OWNER_FINALIZERS)
    unused = _unused(granted_rules(), used)
    assert unused == [], "granted but never used: " + ", ".join(unused)


def test_no_role_of_the_install_reads_secrets() -> None:
    for rule, _ in granted_rules():
        if "" in rule["apiGroups"] and "secrets" in rule["resources"]:
            assert set(rule["verbs"]) <= {"create"}, rule
