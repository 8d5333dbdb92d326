"""The kinds controllers need, pods/binding, Events, generateName and chaos faults on the fake API server."""

from __future__ import annotations

import asyncio
import base64
import json

import kubernetes
import pytest
from fakeapi.fixtures import FakeApi
from kubernetes_asyncio import client
from sandbox_support import config_map, job, kube, pod

from sandbox.apiserver import RESOURCE_TYPES, FakeApiServer
from sandbox.apiserver.faults import FAULT_KINDS
from scheduler.kube import KINDS, KubeApiError


def test_the_adapter_and_the_server_know_the_same_kinds() -> None:
    served = {(t.api_version, t.kind): (t.plural, t.namespaced) for t in RESOURCE_TYPES}
    known = {(k.api_version, k.kind): (k.plural, k.namespaced) for k in KINDS.values()}
    assert served == known
    for wanted in ("Job", "Secret", "ConfigMap", "PodGroup", "MutatingWebhookConfiguration"):
        assert wanted in KINDS


async def test_a_job_gets_the_servers_defaults_and_generated_selector(kube_client: client.ApiClient) -> None:
    batch = client.BatchV1Api(kube_client)
    created = await batch.create_namespaced_job("default", job("train"))
    uid = created.metadata.uid
    assert created.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    labels = created.spec.template.metadata.labels
    assert labels["batch.kubernetes.io/job-name"] == "train"
    assert labels["controller-uid"] == uid
    assert created.spec.backoff_limit == 6
    assert created.spec.suspend is False
    assert created.spec.completion_mode == "Indexed"
    assert created.metadata.labels["job-name"] == "train"
    status = await batch.patch_namespaced_job_status("train", "default", {"status": {"active": 2}})
    assert status.status.active == 2


async def test_secret_string_data_becomes_data(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    secret = client.V1Secret(metadata=client.V1ObjectMeta(name="ssh"), string_data={"id_rsa": "KEY"})
    created = await core.create_namespaced_secret("default", secret)
    assert created.data == {"id_rsa": base64.b64encode(b"KEY").decode()}
    assert created.string_data is None
    assert created.type == "Opaque"
    maps = await core.list_namespaced_config_map("default")
    assert maps.items == []


async def test_podgroups_and_webhook_configurations_are_served(kube_client: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(kube_client)
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "train"},
        "spec": {"minMember": 4},
        "status": {"phase": "Running"},
    }
    created = await custom.create_namespaced_custom_object(
        "scheduling.x-k8s.io", "v1alpha1", "default", "podgroups", group
    )
    assert created["spec"] == {"minMember": 4}
    assert "status" not in created  # a CRD with a status subresource drops status on create
    admission = client.AdmissionregistrationV1Api(kube_client)
    hook = client.V1ValidatingWebhookConfiguration(
        metadata=client.V1ObjectMeta(name="trainyard"),
        webhooks=[
            client.V1ValidatingWebhook(
                name="trainjobs.trainyard.io",
                admission_review_versions=["v1"],
                side_effects="None",
                client_config=client.AdmissionregistrationV1WebhookClientConfig(url="https://127.0.0.1:9443/validate"),
            )
        ],
    )
    await admission.create_validating_webhook_configuration(hook)
    listed = await admission.list_validating_webhook_configuration()
    assert [w.name for w in listed.items[0].webhooks] == ["trainjobs.trainyard.io"]
    mutating = await admission.list_mutating_webhook_configuration()
    assert mutating.items == []


async def test_pods_binding_sets_the_node_and_refuses_gated_or_bound_pods(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    await core.create_namespaced_pod("default", pod("free"))
    await core.create_namespaced_pod("default", pod("gated", schedulingGates=[{"name": "trainyard.io/placement"}]))
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="free"), target=client.V1ObjectReference(kind="Node", name="node-1")
    )
    answer = await core.create_namespaced_pod_binding("free", "default", binding, _preload_content=False)
    assert answer.status == 201
    assert json.loads(await answer.read())["status"] == "Success"
    bound = await core.read_namespaced_pod("free", "default")
    assert bound.spec.node_name == "node-1"
    assert [(c.type, c.status) for c in bound.status.conditions] == [("PodScheduled", "True")]
    # raw responses: the generated client cannot read a Status back as a V1Binding
    again = await core.create_namespaced_pod_binding("free", "default", binding, _preload_content=False)
    assert again.status == 409
    assert 'already assigned to node "node-1"' in json.loads(await again.read())["message"]
    binding.metadata.name = "gated"
    gated = await core.create_namespaced_pod_binding("gated", "default", binding, _preload_content=False)
    assert gated.status == 409
    assert json.loads(await gated.read())["message"] == (
        'Operation cannot be fulfilled on pods/binding "gated": pod gated has non-empty .spec.schedulingGates'
    )
    assert (await core.read_namespaced_pod("gated", "default")).spec.node_name is None


async def test_bind_pod_through_kube_client(fake_api: FakeApi) -> None:
    async with kube(fake_api) as kube_client:
        await kube_client.create(pod("p"))
        await kube_client.bind_pod("p", "default", "node-7")
        assert (await kube_client.get("Pod", "p", "default"))["spec"]["nodeName"] == "node-7"
        with pytest.raises(KubeApiError) as missing:
            await kube_client.bind_pod("nope", "default", "node-7")
    assert missing.value.status == 404


def _event(name: str, involved: str, uid: str, reason: str) -> client.CoreV1Event:
    return client.CoreV1Event(
        metadata=client.V1ObjectMeta(name=name),
        involved_object=client.V1ObjectReference(
            api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob", name=involved, namespace="default", uid=uid
        ),
        reason=reason,
        message=f"{reason} {involved}",
        type="Normal",
        source=client.V1EventSource(component="trainyard"),
    )


async def test_events_by_field_selector_on_the_involved_object(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    await core.create_namespaced_event("default", _event("a.1", "a", "uid-a", "Admitted"))
    await core.create_namespaced_event("default", _event("b.1", "b", "uid-b", "Pending"))
    await core.create_namespaced_event("default", _event("a.2", "a", "uid-a", "Started"))
    by_name = await core.list_namespaced_event(
        "default", field_selector="involvedObject.name=a,involvedObject.kind=TrainJob"
    )
    assert [e.reason for e in by_name.items] == ["Admitted", "Started"]
    by_uid = await core.list_namespaced_event("default", field_selector="involvedObject.uid=uid-b")
    assert [e.metadata.name for e in by_uid.items] == ["b.1"]
    by_source = await core.list_event_for_all_namespaces(field_selector="source=trainyard,reason=Pending")
    assert [e.metadata.name for e in by_source.items] == ["b.1"]


async def test_generate_name_uses_the_real_servers_suffix_alphabet(fake_api: FakeApi) -> None:
    async with kube(fake_api) as kube_client:
        names = []
        for _ in range(20):
            made = await kube_client.create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cm-", "namespace": "default"}}
            )
            names.append(made["metadata"]["name"])
    assert len(set(names)) == 20
    for name in names:
        suffix = name.removeprefix("cm-")
        assert len(suffix) == 5
        assert set(suffix) <= set("bcdfghjklmnpqrstvwxz2456789")


async def test_random_faults_are_counted_and_repeatable(fake_api: FakeApi) -> None:
    async with kube(fake_api) as kube_client:
        await kube_client.create(config_map("cm"))
        outcomes: list[list[int]] = []
        delays: set[float | None] = set()
        for _ in range(2):
            fake_api.faults.random(0.5, seed=7, kinds=("throttle", "server-error", "conflict"), retry_after=3)
            seen = []
            for _ in range(40):
                try:
                    await kube_client.patch("ConfigMap", "cm", {"data": {"k": "v"}}, "default")
                    seen.append(200)
                except KubeApiError as error:
                    seen.append(error.status)
                    if error.status == 429:
                        delays.add(error.retry_after)
            outcomes.append(seen)
        fake_api.faults.calm()
        await kube_client.get("ConfigMap", "cm", "default")
    assert outcomes[0] == outcomes[1]
    assert delays == {3.0}
    assert {409, 429, 200} <= set(outcomes[0])
    assert set(outcomes[0]) <= {200, 409, 429, 500, 503}
    injected = fake_api.faults.injected
    assert injected["throttle"] + injected["server-error"] + injected["conflict"] == sum(
        1 for run in outcomes for status in run if status != 200
    )


async def test_random_watch_faults_expire_and_drop_streams(fake_api: FakeApi) -> None:
    with pytest.raises(ValueError, match="unknown fault kinds"):
        fake_api.faults.random(0.1, kinds=("meteor",))
    assert "expire" in FAULT_KINDS
    async with kube(fake_api) as kube_client:
        await kube_client.create(config_map("cm"))
        revision = str(fake_api.store.resource_version)
        fake_api.faults.random(1.0, seed=1, kinds=("expire",))
        await kube_client.get("ConfigMap", "cm", "default")  # this request compacts the history
        fake_api.faults.calm()
        stream = kube_client.watch("ConfigMap", "default", resource_version=str(int(revision) - 1), timeout_seconds=5)
        with pytest.raises(KubeApiError) as expired:
            async for _ in stream:
                pass
    assert expired.value.status == 410
    assert fake_api.faults.injected["expire"] == 1


async def test_random_expiries_keep_the_compaction_interval(fake_api: FakeApi) -> None:
    async with kube(fake_api) as kube_client:
        await kube_client.create(config_map("cm"))
        fake_api.faults.random(1.0, seed=1, kinds=("expire",), compaction_interval=3600.0)
        for _ in range(5):
            await kube_client.get("ConfigMap", "cm", "default")
        fake_api.faults.calm()
    assert fake_api.faults.injected["expire"] == 1, "one compaction, then none within the interval"


async def test_a_second_independent_client_reads_the_same_objects(fake_api: FakeApi) -> None:
    """The official synchronous ``kubernetes`` client (in a thread), paging included."""
    for index in range(3):
        fake_api.server.seed(config_map(f"cm-{index}"))
    fake_api.server.seed(job("train"))

    def read() -> tuple[list[str], list[str], str | None, str]:
        api_client = kubernetes.config.new_client_from_config(config_file=str(fake_api.kubeconfig))
        try:
            core = kubernetes.client.CoreV1Api(api_client)
            first = core.list_namespaced_config_map("default", limit=2)
            rest = core.list_namespaced_config_map("default", limit=2, _continue=first.metadata._continue)
            jobs = kubernetes.client.BatchV1Api(api_client).list_namespaced_job("default")
            return (
                [i.metadata.name for i in first.items + rest.items],
                [j.metadata.name for j in jobs.items],
                jobs.items[0].spec.completion_mode,
                jobs.items[0].spec.selector.match_labels["batch.kubernetes.io/controller-uid"],
            )
        finally:
            api_client.close()

    names, jobs, mode, uid = await asyncio.to_thread(read)
    assert names == ["cm-0", "cm-1", "cm-2"]
    assert jobs == ["train"]
    assert mode == "Indexed"
    assert uid == fake_api.store.get(fake_api.server.type_of("batch/v1", "Job"), "default", "train")["metadata"]["uid"]
    assert isinstance(fake_api.server, FakeApiServer)


async def test_scheduling_gates_can_only_be_removed(fake_api: FakeApi) -> None:
    async with kube(fake_api) as kube_client:
        await kube_client.create(pod("gated", schedulingGates=[{"name": "a"}]))
        with pytest.raises(KubeApiError) as added:
            await kube_client.patch(
                "Pod", "gated", {"spec": {"schedulingGates": [{"name": "a"}, {"name": "b"}]}}, "default"
            )
        with pytest.raises(KubeApiError) as bound:
            await kube_client.create(pod("placed", nodeName="n-1", schedulingGates=[{"name": "a"}]))
        cleared = await kube_client.patch("Pod", "gated", {"spec": {"schedulingGates": None}}, "default")
    assert added.value.status == 422
    assert added.value.message == (
        'Pod "gated" is invalid: spec.schedulingGates: Forbidden: only deletion is allowed, '
        "but found new scheduling gate 'b'"
    )
    assert bound.value.status == 422
    assert "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared" in bound.value.message
    assert "schedulingGates" not in cleared["spec"]
