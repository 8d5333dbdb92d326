"""The fake API server through the real kubernetes-asyncio client: create, get, list, update, patch, delete."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from fakeapi.fixtures import FakeApi
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

KUEUE = ("kueue.x-k8s.io", "v1beta2")


def local_queue(name: str, cluster_queue: str = "team-a", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "labels": labels},
        "spec": {"clusterQueue": cluster_queue},
    }


def status_of(error: ApiException) -> dict[str, Any]:
    import json

    body: dict[str, Any] = json.loads(error.body)
    return body


async def test_create_returns_201_with_uid_revision_and_timestamp(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    created = await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("default"))
    assert created is not None, "kubernetes-asyncio only deserialises a 201"
    metadata = created["metadata"]
    assert metadata["uid"]
    assert metadata["creationTimestamp"]
    assert int(metadata["resourceVersion"]) > 0
    assert metadata["namespace"] == "default"
    assert metadata["generation"] == 1


async def test_duplicate_create_is_409_already_exists(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("q"))
    with pytest.raises(ApiException) as raised:
        await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("q"))
    assert raised.value.status == 409
    status = status_of(raised.value)
    assert status["kind"] == "Status"
    assert status["reason"] == "AlreadyExists"
    assert status["message"] == 'localqueues.kueue.x-k8s.io "q" already exists'


async def test_generate_name_makes_a_unique_name(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    first = await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(generate_name="team-")))
    second = await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(generate_name="team-")))
    assert first.metadata.name.startswith("team-")
    assert first.metadata.name != second.metadata.name
    assert first.metadata.labels["kubernetes.io/metadata.name"] == first.metadata.name


async def test_get_missing_is_404_with_a_status_body(kube_client: client.ApiClient) -> None:
    with pytest.raises(ApiException) as raised:
        await client.CustomObjectsApi(kube_client).get_cluster_custom_object(*KUEUE, "clusterqueues", "nope")
    assert raised.value.status == 404
    status = status_of(raised.value)
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'clusterqueues.kueue.x-k8s.io "nope" not found',
        "reason": "NotFound",
        "code": 404,
        "details": {"name": "nope", "kind": "clusterqueues", "group": "kueue.x-k8s.io"},
    }


async def test_create_in_a_missing_namespace_is_404(kube_client: client.ApiClient) -> None:
    with pytest.raises(ApiException) as raised:
        await client.CustomObjectsApi(kube_client).create_namespaced_custom_object(
            *KUEUE, "ghost", "localqueues", local_queue("q")
        )
    assert raised.value.status == 404
    assert status_of(raised.value)["message"] == 'namespaces "ghost" not found'


async def test_list_has_the_revision_and_label_selectors_filter(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("a", tier="gold"))
    await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("b", tier="silver"))
    await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("c"))
    listed = await api.list_namespaced_custom_object(*KUEUE, "default", "localqueues")
    assert listed["kind"] == "LocalQueueList"
    assert int(listed["metadata"]["resourceVersion"]) >= 3
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b", "c"]

    async def names(selector: str) -> list[str]:
        found = await api.list_namespaced_custom_object(*KUEUE, "default", "localqueues", label_selector=selector)
        return [i["metadata"]["name"] for i in found["items"]]

    assert await names("tier=gold") == ["a"]
    assert await names("tier==gold") == ["a"]
    assert await names("tier!=gold") == ["b", "c"]
    assert await names("tier in (gold, silver)") == ["a", "b"]
    assert await names("tier notin (gold)") == ["b", "c"]
    assert await names("tier") == ["a", "b"]
    assert await names("!tier") == ["c"]
    assert await names("tier in (gold,silver),tier!=silver") == ["a"]


async def test_field_selectors_by_name_and_namespace(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    for name in ("a", "b"):
        await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name)))
    nodes = await core.list_node(field_selector="metadata.name=b")
    assert [n.metadata.name for n in nodes.items] == ["b"]
    nodes = await core.list_node(field_selector="metadata.name!=b")
    assert [n.metadata.name for n in nodes.items] == ["a"]
    with pytest.raises(ApiException) as raised:
        await core.list_node(field_selector="spec.podCIDR=x")
    assert raised.value.status == 400


async def test_built_in_list_items_have_no_kind_but_custom_ones_do(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    raw = await core.list_namespace(_preload_content=False)
    listed = await raw.json()
    raw.release()
    assert all("kind" not in item for item in listed["items"])
    assert {item["metadata"]["name"] for item in listed["items"]} >= {"default", "kube-system"}


async def test_put_with_a_stale_resource_version_is_409(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    created = await api.create_cluster_custom_object(
        *KUEUE,
        "resourceflavors",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "gpu"}},
    )
    created["spec"] = {"nodeLabels": {"gpu": "a100"}}
    updated = await api.replace_cluster_custom_object(*KUEUE, "resourceflavors", "gpu", created)
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert updated["metadata"]["generation"] == 2
    created["spec"] = {"nodeLabels": {"gpu": "h100"}}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as raised:
        await api.replace_cluster_custom_object(*KUEUE, "resourceflavors", "gpu", created)
    assert raised.value.status == 409
    assert status_of(raised.value)["reason"] == "Conflict"
    assert "the object has been modified" in status_of(raised.value)["message"]


async def test_create_with_a_resource_version_is_refused(kube_client: client.ApiClient) -> None:
    body = local_queue("q")
    body["metadata"]["resourceVersion"] = "7"
    with pytest.raises(ApiException) as raised:
        await client.CustomObjectsApi(kube_client).create_namespaced_custom_object(
            *KUEUE, "default", "localqueues", body
        )
    assert raised.value.status == 500
    assert "resourceVersion should not be set" in status_of(raised.value)["message"]


async def test_merge_patch_and_json_patch(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("q", team="a"))
    merged = await api.patch_namespaced_custom_object(
        *KUEUE,
        "default",
        "localqueues",
        "q",
        {"metadata": {"labels": {"team": None, "tier": "gold"}}, "spec": {"clusterQueue": "team-b"}},
        _content_type="application/merge-patch+json",
    )
    assert merged["metadata"]["labels"] == {"tier": "gold"}
    assert merged["spec"]["clusterQueue"] == "team-b"
    patched = await api.patch_namespaced_custom_object(
        *KUEUE,
        "default",
        "localqueues",
        "q",
        [{"op": "replace", "path": "/spec/clusterQueue", "value": "team-c"}],
    )
    assert patched["spec"]["clusterQueue"] == "team-c"
    with pytest.raises(ApiException) as raised:
        await api.patch_namespaced_custom_object(
            *KUEUE, "default", "localqueues", "q", [{"op": "test", "path": "/spec/clusterQueue", "value": "x"}]
        )
    assert raised.value.status == 422


async def test_merge_patch_with_a_stale_resource_version_is_409(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    created = await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("q"))
    await api.patch_namespaced_custom_object(
        *KUEUE,
        "default",
        "localqueues",
        "q",
        {"spec": {"stopPolicy": "Hold"}},
        _content_type="application/merge-patch+json",
    )
    with pytest.raises(ApiException) as raised:
        await api.patch_namespaced_custom_object(
            *KUEUE,
            "default",
            "localqueues",
            "q",
            {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "spec": {"stopPolicy": "None"}},
            _content_type="application/merge-patch+json",
        )
    assert raised.value.status == 409


async def test_strategic_merge_patch_works_on_built_ins_and_is_415_on_custom_resources(
    kube_client: client.ApiClient,
) -> None:
    core = client.CoreV1Api(kube_client)
    await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="n1")))
    node = await core.patch_node("n1", {"metadata": {"labels": {"zone": "a"}}})  # strategic by default
    assert node.metadata.labels == {"zone": "a"}
    api = client.CustomObjectsApi(kube_client)
    await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("q"))
    with pytest.raises(ApiException) as raised:
        await api.patch_namespaced_custom_object(
            *KUEUE,
            "default",
            "localqueues",
            "q",
            {"spec": {"clusterQueue": "x"}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert raised.value.status == 415


async def test_status_subresource_is_separate_from_the_main_resource(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    body = local_queue("q")
    body["status"] = {"pendingWorkloads": 9}
    created = await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", body)
    assert "status" not in created, "status is dropped on create with the status subresource"
    with_status = await api.patch_namespaced_custom_object_status(
        *KUEUE,
        "default",
        "localqueues",
        "q",
        {"status": {"pendingWorkloads": 2}, "spec": {"clusterQueue": "ignored"}},
        _content_type="application/merge-patch+json",
    )
    assert with_status["status"] == {"pendingWorkloads": 2}
    assert with_status["spec"]["clusterQueue"] == "team-a"
    assert with_status["metadata"]["generation"] == 1
    with_status["spec"]["clusterQueue"] = "team-b"
    with_status["status"] = {"pendingWorkloads": 0}
    replaced = await api.replace_namespaced_custom_object(*KUEUE, "default", "localqueues", "q", with_status)
    assert replaced["spec"]["clusterQueue"] == "team-b"
    assert replaced["status"] == {"pendingWorkloads": 2}, "the main resource ignores status"
    assert replaced["metadata"]["generation"] == 2
    replaced["status"] = {"pendingWorkloads": 5}
    status_put = await api.replace_namespaced_custom_object_status(*KUEUE, "default", "localqueues", "q", replaced)
    assert status_put["status"] == {"pendingWorkloads": 5}


async def test_delete_then_get_is_404_and_finalizers_defer_deletion(kube_client: client.ApiClient) -> None:
    api = client.CustomObjectsApi(kube_client)
    await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("q"))
    await api.delete_namespaced_custom_object(*KUEUE, "default", "localqueues", "q")
    with pytest.raises(ApiException) as raised:
        await api.get_namespaced_custom_object(*KUEUE, "default", "localqueues", "q")
    assert raised.value.status == 404

    body = local_queue("held")
    body["metadata"]["finalizers"] = ["trainyard.io/test"]
    await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", body)
    await api.delete_namespaced_custom_object(*KUEUE, "default", "localqueues", "held")
    held = await api.get_namespaced_custom_object(*KUEUE, "default", "localqueues", "held")
    assert held["metadata"]["deletionTimestamp"]
    await api.patch_namespaced_custom_object(
        *KUEUE,
        "default",
        "localqueues",
        "held",
        {"metadata": {"finalizers": None}},
        _content_type="application/merge-patch+json",
    )
    with pytest.raises(ApiException) as raised:
        await api.get_namespaced_custom_object(*KUEUE, "default", "localqueues", "held")
    assert raised.value.status == 404


async def test_lease_put_conflicts_drive_optimistic_concurrency(kube_client: client.ApiClient) -> None:
    coordination = client.CoordinationV1Api(kube_client)
    lease = client.V1Lease(
        metadata=client.V1ObjectMeta(name="trainyard", namespace="kube-system"),
        spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15),
    )
    created = await coordination.create_namespaced_lease("kube-system", lease)
    created.spec.holder_identity = "b"
    await coordination.replace_namespaced_lease("trainyard", "kube-system", created)
    created.spec.holder_identity = "c"
    with pytest.raises(ApiException) as raised:
        await coordination.replace_namespaced_lease("trainyard", "kube-system", created)
    assert raised.value.status == 409
    current = await coordination.read_namespaced_lease("trainyard", "kube-system")
    assert current.spec.holder_identity == "b"


async def test_pods_start_pending_and_nodes_keep_their_status(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="p"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")], node_name="n1"),
        status=client.V1PodStatus(phase="Running"),
    )
    created = await core.create_namespaced_pod("default", pod)
    assert created.status.phase == "Pending"
    node = client.V1Node(
        metadata=client.V1ObjectMeta(name="n1"), status=client.V1NodeStatus(allocatable={"nvidia.com/gpu": "8"})
    )
    assert (await core.create_node(node)).status.allocatable == {"nvidia.com/gpu": "8"}
    pods = await core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1")
    assert [p.metadata.name for p in pods.items] == ["p"]


async def test_deleting_a_namespace_deletes_what_is_in_it(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    api = client.CustomObjectsApi(kube_client)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="team-a")))
    await api.create_namespaced_custom_object(*KUEUE, "team-a", "localqueues", local_queue("q"))
    await core.delete_namespace("team-a")
    listed = await api.list_cluster_custom_object(*KUEUE, "localqueues")
    assert listed["items"] == []


async def test_requests_without_the_token_are_401(fake_api: FakeApi) -> None:
    configuration = client.Configuration(host=fake_api.url)
    async with client.ApiClient(configuration) as unauthenticated:
        with pytest.raises(ApiException) as raised:
            await client.CoreV1Api(unauthenticated).list_namespace()
    assert raised.value.status == 401


async def test_discovery_lists_every_group_and_resource(kube_client: client.ApiClient) -> None:
    groups = await client.ApisApi(kube_client).get_api_versions()
    names = {g.name for g in groups.groups}
    assert names >= {
        "kueue.x-k8s.io",
        "trainer.kubeflow.org",
        "jobset.x-k8s.io",
        "kwok.x-k8s.io",
        "coordination.k8s.io",
    }
    core = await client.CoreV1Api(kube_client).get_api_resources()
    assert {r.name for r in core.resources} >= {"namespaces", "nodes", "pods", "events", "pods/status"}
    kueue = await client.CustomObjectsApi(kube_client).get_api_resources("kueue.x-k8s.io", "v1beta2")
    scoped = {r.name: r.namespaced for r in kueue.resources}
    assert scoped["localqueues"] is True
    assert scoped["clusterqueues"] is False
    assert {"workloads/status", "topologies", "cohorts", "workloadpriorityclasses"} <= set(scoped)


async def test_a_lost_answer_leaves_the_write_committed_and_the_client_unsure(
    fake_api: FakeApi, kube_client: client.ApiClient
) -> None:
    """``lose_answers``: the server commits, then cuts the connection before it answers."""
    api = client.CustomObjectsApi(kube_client)
    rule = fake_api.faults.lose_answers("create", "/localqueues")
    with pytest.raises(aiohttp.ClientError):
        await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("landed"))
    assert rule.remaining == 0
    assert fake_api.faults.injected["answer-lost"] == 1
    # a second client, on its own connection, finds what the first never heard about
    reader = await fake_api.api_client()
    try:
        found = await client.CustomObjectsApi(reader).get_namespaced_custom_object(
            *KUEUE, "default", "localqueues", "landed"
        )
    finally:
        await reader.close()
    assert found["metadata"]["name"] == "landed"
    # and a retry of the create meets the object it made itself
    with pytest.raises(ApiException) as again:
        await api.create_namespaced_custom_object(*KUEUE, "default", "localqueues", local_queue("landed"))
    assert again.value.status == 409
