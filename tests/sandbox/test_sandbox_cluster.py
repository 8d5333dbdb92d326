"""The sandbox cluster end to end: HTTPS + token, trainyard's webhook and controllers, KWOK pods.

A TrainJob created over HTTPS is mutated and validated by trainyard's real webhook (called by
the API server through manifests/webhook's configurations), admitted by the controllers, run as
a JobSet whose pods the binder places and KWOK's Stages move to Succeeded. A job that can never
fit is refused with the webhook's message. A second, independent client (the official
``kubernetes`` package) reads the same objects through the written kubeconfig.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from sandbox_support import condition_of

from sandbox.embedded import Sandbox
from scheduler.kube import KubeApiError
from simulations.kwok import POD_COMPLETE_DELAY_ANNOTATION, POD_COMPLETE_JITTER_ANNOTATION
from tests.builders import kwok_trainjob
from tests.eventually import eventually


async def test_a_trainjob_runs_through_webhook_controllers_and_kwok(tmp_path: Path) -> None:
    async with Sandbox(speedup=20.0, kubeconfig_out=tmp_path / "sandbox.kubeconfig") as sb:
        client = sb.client()
        created = await client.create(kwok_trainjob("fits"))
        assert created["spec"]["suspend"] is True, "trainyard's mutating webhook suspends queued TrainJobs"
        with pytest.raises(KubeApiError) as refused:
            await client.create(kwok_trainjob("never-fits", nodes=100))
        assert refused.value.status == 403
        assert 'admission webhook "vtrainjob.trainyard.dev" denied the request' in str(refused.value)
        assert "can never be admitted" in str(refused.value)

        async def complete() -> bool:
            job = await client.get("TrainJob", "fits", "team-a")
            found = condition_of(job, "Complete")
            return found is not None and found["status"] == "True"

        await eventually(complete, timeout=30.0, what="the TrainJob to complete")
        pods = (await client.list("Pod", namespace="team-a")).items
        assert len(pods) == 2
        for pod in pods:
            assert pod["status"]["phase"] == "Succeeded"
            assert pod["status"]["podIP"].startswith("10.244.")
            assert pod["spec"]["nodeName"].startswith("gpu-node-")
        stages = {stage for _, stage in sb.kwok.applied} if sb.kwok is not None else set()
        assert {"pod-ready", "pod-complete"} <= stages


async def test_https_with_token_and_the_official_client_reads_the_same_objects(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "sandbox.kubeconfig"
    async with Sandbox(kubeconfig_out=kubeconfig, controllers=False, standins=False, kwok=False) as sb:
        assert sb.url.startswith("https://127.0.0.1:")
        assert kubeconfig.stat().st_mode & 0o077 == 0, "the kubeconfig holds a token: owner-only"
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["clusters"][0]["cluster"]["certificate-authority-data"]
        # no token: 401, and no trust in the generated CA: the TLS handshake fails
        assert sb.server.certificates is not None
        trusting = sb.server.certificates.client_context()
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{sb.url}/api/v1/nodes", ssl=trusting) as answer:
                assert answer.status == 401
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await session.get(f"{sb.url}/api/v1/nodes", ssl=ssl.create_default_context())

        def read_with_official_client() -> tuple[list[str], list[str], dict[str, Any]]:
            from kubernetes import client, config

            api_client = config.new_client_from_config(config_file=str(kubeconfig))
            try:
                nodes = [n.metadata.name for n in client.CoreV1Api(api_client).list_node().items]
                queues = client.CustomObjectsApi(api_client).list_cluster_custom_object(
                    "kueue.x-k8s.io", "v1beta2", "clusterqueues"
                )
                hooks = client.AdmissionregistrationV1Api(api_client).read_validating_webhook_configuration("trainyard")
                return nodes, [q["metadata"]["name"] for q in queues["items"]], hooks.to_dict()
            finally:
                api_client.close()

        nodes, queues, hooks = await asyncio.to_thread(read_with_official_client)
        mine = [n["metadata"]["name"] for n in (await sb.client().list("Node")).items]
        assert sorted(nodes) == sorted(mine)
        assert len(nodes) == 8
        assert sorted(queues) == ["team-a", "team-b", "team-c", "team-d"]
        assert [w["name"] for w in hooks["webhooks"]] == [
            "vtrainjob.trainyard.dev",
            "vkueue.trainyard.dev",
            "vruntime.trainyard.dev",
        ]


async def test_a_scheduling_gate_holds_pods_until_trainyards_ungater_acts() -> None:
    from runtimes.api.kueue_labels import PODSET_REQUIRED_TOPOLOGY
    from sandbox.apiserver.records import StoredEvent
    from scheduler.controllers.constants import TOPOLOGY_SCHEDULING_GATE
    from simulations.cluster_spec import BLOCK_LABEL

    versions: dict[str, list[dict[str, Any]]] = {}

    def record(event: StoredEvent) -> None:
        if event.obj.get("kind") == "Pod" and event.type != "DELETED":
            versions.setdefault(event.obj["metadata"]["name"], []).append(event.obj)

    async with Sandbox(speedup=20.0) as sb:
        sb.server.store.observers.append(record)
        job = kwok_trainjob("in-one-block", nodes=3)
        job["spec"]["podTemplateOverrides"][0]["metadata"]["annotations"][PODSET_REQUIRED_TOPOLOGY] = BLOCK_LABEL
        await sb.client().create(job)

        async def complete() -> bool:
            found = condition_of(await sb.client().get("TrainJob", "in-one-block", "team-a"), "Complete")
            return found is not None and found["status"] == "True"

        await eventually(complete, timeout=30.0, what="the TrainJob to complete")
    assert len(versions) == 3
    blocks = set()
    for name, history in versions.items():
        gates = [[g["name"] for g in (v["spec"].get("schedulingGates") or [])] for v in history]
        assert gates[0] == [TOPOLOGY_SCHEDULING_GATE], f"{name} is created gated"
        assert not history[0]["spec"].get("nodeName")
        for version, gated in zip(history, gates, strict=True):
            assert not (gated and version["spec"].get("nodeName")), f"{name} was bound while still gated"
        bound = [v for v in history if v["spec"].get("nodeName")]
        assert bound, f"{name} was never bound"
        node = bound[0]["spec"]["nodeName"]
        # the ungater pinned the pod where the admission placed it: the binder honoured its selector
        assert bound[0]["spec"].get("nodeSelector", {}).get("kubernetes.io/hostname") == node
        blocks.add(node.rsplit("-n", 1)[0])
    assert len(blocks) == 1, f"required topology keeps the job in one block, got {blocks}"


FAIL_FIRST_ATTEMPT = """
# Pods of a JobSet's first attempt fail once running; later attempts run to completion.
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-fail-first-attempt}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchLabels: {jobset.sigs.k8s.io/restart-attempt: "0"}
    matchAnnotations: {sandbox.test/flaky: "true"}
    matchExpressions:
    - {key: .status.phase, operator: In, values: [Running]}
  weight: 1
  next:
    statusTemplate: |
      phase: Failed
"""


async def test_a_jobset_restarts_under_its_failure_policy_when_kwok_fails_a_pod(tmp_path: Path) -> None:
    from simulations.kwok import DEFAULT_STAGES_DIR

    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "fail.yaml").write_text(FAIL_FIRST_ATTEMPT)
    scenario = tmp_path / "flaky.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {
                "name": "flaky",
                "cluster": {"spinesPerZone": 1, "blocksPerSpine": 1, "nodesPerBlock": 2},
                "stages": [str(DEFAULT_STAGES_DIR), "stages"],
            }
        )
    )
    container = {"name": "node", "image": "trainer", "resources": {"requests": {"cpu": "1"}}}
    pod_template = {
        "metadata": {
            "annotations": {
                "sandbox.test/flaky": "true",
                POD_COMPLETE_DELAY_ANNOTATION: "1s",
                POD_COMPLETE_JITTER_ANNOTATION: "1s",
            }
        },
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }
    job_template = {"spec": {"parallelism": 2, "completions": 2, "backoffLimit": 0, "template": pod_template}}
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "flaky", "namespace": "default"},
        "spec": {
            "failurePolicy": {"maxRestarts": 2},
            "replicatedJobs": [{"name": "workers", "replicas": 1, "template": job_template}],
        },
    }
    async with Sandbox(scenario, speedup=20.0, controllers=False, webhook=False) as sb:
        client = sb.client()
        await client.create(jobset)

        async def completed() -> dict[str, Any] | None:
            found = await client.get("JobSet", "flaky", "default")
            done = condition_of(found, "Completed")
            return found if done is not None and done["status"] == "True" else None

        finished = await eventually(completed, timeout=30.0, what="the restarted JobSet to complete")
        assert finished["status"]["restarts"] == 1
        assert sb.kwok is not None
        failed = [key for key, stage in sb.kwok.applied if stage == "pod-fail-first-attempt"]
        assert failed, "KWOK failed a pod of the first attempt"
        jobs = (await client.list("Job", "default")).items
        assert {j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] for j in jobs} == {"1"}
